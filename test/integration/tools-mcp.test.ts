// McpToolSource against real MCP servers: the stdio fixture test/fakes/mcp-echo-server.ts runs as
// a child process speaking the real protocol through @modelcontextprotocol/sdk.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError, ConfigError, ToolError } from '../../src/core/errors.js';
import type { ToolContext } from '../../src/core/tool.js';
import { createLogger } from '../../src/log.js';
import { McpToolSource, toolName } from '../../src/tools/mcp.js';
import { toolDefinitions } from '../../src/tools/registry.js';
import { toolContext } from '../support/tool-context.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixture = path.join(repoRoot, 'test/fakes/mcp-echo-server.ts');

const context = toolContext;

const echoServer = (env: Record<string, string> = {}) => ({ command: process.execPath, args: ['--import', 'tsx', fixture], cwd: repoRoot, env });

interface LogLine {
  level: number;
  msg: string;
  server?: string;
  error?: string;
}

let directory: string;
const logLines: LogLine[] = [];
const log = createLogger('debug', { write: (line: string) => void logLines.push(JSON.parse(line) as LogLine) });

async function writeConfig(name: string, content: unknown): Promise<string> {
  const file = path.join(directory, name);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function call(source: McpToolSource, name: string, args: Record<string, unknown> = {}, overrides: Partial<ToolContext> = {}): Promise<string> {
  const tool = source.tools().find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool.execute(tool.input.parse(args), context(overrides));
}

function pidOf(source: McpToolSource, server: string): number | undefined {
  return source.status().find((status) => status.name === server)?.pid;
}

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'hippo-mcp-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('McpToolSource', () => {
  let source: McpToolSource;

  beforeAll(async () => {
    const configPath = await writeConfig('mcp.json', {
      mcpServers: {
        echo: echoServer(),
        missing: { command: path.join(directory, 'no-such-server') },
        off: { command: 'never-started', disabled: true },
      },
    });
    source = await McpToolSource.start({ configPath, log, callTimeoutMs: 10_000 });
  });

  afterAll(async () => {
    await source.close();
  });

  it('lists the server tools as <server>__<tool> with their JSON Schema', () => {
    const names = source.tools().map((tool) => tool.name);
    expect(names).toEqual(['echo__echo', 'echo__add', 'echo__pid', 'echo__sleep', 'echo__fail', 'echo__picture', 'echo__crash']);
    const definitions = toolDefinitions(source.tools());
    const add = definitions.find((definition) => definition.function.name === 'echo__add');
    expect(add?.function.description).toBe('Adds two numbers.');
    expect(add?.function.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });
    expect(add?.function.parameters).not.toHaveProperty('$schema');
    const echo = definitions.find((definition) => definition.function.name === 'echo__echo');
    expect(echo?.function.parameters).toMatchObject({ properties: { text: { type: 'string', description: 'Text to echo' } } });
  });

  it('calls a tool and returns its text', async () => {
    expect(await call(source, 'echo__echo', { text: 'hello' })).toBe('hello');
    expect(await call(source, 'echo__add', { a: 2, b: 3 })).toBe('5');
  });

  it('hands an image over when the model is shown images, and describes it otherwise', async () => {
    const images: Array<{ mimeType: string; data: string }> = [];
    const shown = await call(source, 'echo__picture', {}, { addImage: (image) => images.push(image) > 0 });
    expect(shown).toBe('a red dot\n[image image/png, 70 B, shown after the tool results]');
    expect(images.map((image) => [image.mimeType, Buffer.from(image.data, 'base64').length])).toEqual([['image/png', 70]]);
    expect(await call(source, 'echo__picture')).toBe('a red dot\n[image image/png, 70 B, not shown]');
  });

  it('returns tool errors and invalid arguments as ToolErrors, keeping the server', async () => {
    const pid = pidOf(source, 'echo');
    await expect(call(source, 'echo__fail')).rejects.toThrow(new ToolError('this tool always fails'));
    await expect(call(source, 'echo__add', { a: 'two', b: 3 })).rejects.toBeInstanceOf(ToolError);
    expect(pidOf(source, 'echo')).toBe(pid);
  });

  it('reports a server that fails to start and skips it without throwing', () => {
    const failure = logLines.find((line) => line.msg === 'mcp-server-start-failed');
    expect(failure).toMatchObject({ server: 'missing', level: 50 });
    expect(failure?.error).toMatch(/ENOENT/);
    expect(source.status().map((status) => status.name)).toEqual(['echo']);
    expect(source.tools().some((tool) => tool.name.startsWith('missing__') || tool.name.startsWith('off__'))).toBe(false);
  });

  it('turns a crash during a call into a ToolError and restarts the server on the next call', async () => {
    const before = pidOf(source, 'echo');
    const crashing = call(source, 'echo__crash');
    await expect(crashing).rejects.toBeInstanceOf(ToolError);
    await expect(crashing).rejects.toThrow('MCP server "echo" stopped during the call');
    expect(await call(source, 'echo__echo', { text: 'back' })).toBe('back');
    const after = pidOf(source, 'echo');
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(source.tools()).toHaveLength(7);
  });

  it('turns a killed server process into a ToolError and restarts it on the next call', async () => {
    const pid = Number(await call(source, 'echo__pid'));
    expect(pid).toBe(pidOf(source, 'echo'));
    const pending = call(source, 'echo__sleep', { ms: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    process.kill(pid, 'SIGKILL');
    await expect(pending).rejects.toThrow(/MCP server "echo" stopped during the call/);
    const restarted = Number(await call(source, 'echo__pid'));
    expect(restarted).not.toBe(pid);
    expect(await call(source, 'echo__add', { a: 1, b: 1 })).toBe('2');
  });

  it('stops waiting when the run is cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('pause')), 200);
    await expect(call(source, 'echo__sleep', { ms: 20_000 }, { signal: controller.signal })).rejects.toBeInstanceOf(CancelledError);
    expect(await call(source, 'echo__echo', { text: 'still alive' })).toBe('still alive');
  });
});

describe('McpToolSource timeouts and shutdown', () => {
  it('times out a slow call and shuts servers down on close', async () => {
    const configPath = await writeConfig('slow.json', { mcpServers: { slow: echoServer() } });
    const source = await McpToolSource.start({ configPath, log, callTimeoutMs: 1_000 });
    await expect(call(source, 'slow__sleep', { ms: 5_000 })).rejects.toThrow('timed out after 1 s');
    const pid = pidOf(source, 'slow');
    expect(pid).toBeDefined();
    await source.close();
    expect(source.status()).toEqual([{ name: 'slow', state: 'closed', tools: 7 }]);
    expect(() => process.kill(pid ?? 0, 0)).toThrow();
    await expect(call(source, 'slow__echo', { text: 'x' })).rejects.toThrow('is shut down');
  });
});

describe('MCP config file', () => {
  it.each([
    ['broken.json', '{ "mcpServers": ', /broken\.json: is not valid JSON/],
    ['no-servers.json', { servers: {} }, /no-servers\.json: mcpServers: /],
    ['no-command.json', { mcpServers: { x: { args: [] } } }, /no-command\.json: mcpServers\.x needs either "command" \(stdio server\) or "url" \(HTTP server\)/],
    ['bad-args.json', { mcpServers: { x: { command: 'a', args: 'b' } } }, /bad-args\.json: mcpServers\.x\.args: /],
    ['bad-url.json', { mcpServers: { x: { url: 'ftp://host/' } } }, /bad-url\.json: mcpServers\.x\.url: /],
  ])('rejects %s with a ConfigError naming the file and the problem', async (name, content, message) => {
    const configPath = await writeConfig(name, content);
    const starting = McpToolSource.start({ configPath, log });
    await expect(starting).rejects.toBeInstanceOf(ConfigError);
    await expect(starting).rejects.toThrow(message);
  });

  it('rejects a missing file', async () => {
    await expect(McpToolSource.start({ configPath: path.join(directory, 'absent.json'), log })).rejects.toThrow(/MCP_CONFIG: .*absent\.json: cannot read the file/);
  });
});

describe('toolName', () => {
  it('keeps only [a-zA-Z0-9_-] and at most 64 characters, staying unique', () => {
    const used = new Set<string>();
    expect(toolName('my server', 'get.thing', used)).toBe('my_server__get_thing');
    const long = toolName('server', 'x'.repeat(100), used);
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[a-zA-Z0-9_-]+$/);
    expect(toolName('my server', 'get thing', used)).not.toBe('my_server__get_thing');
  });
});
