// docs/operations.md "Troubleshooting" quotes what Hippo prints. This test makes the code print
// each message it can print cheaply (start-up checks, the database, the data directory, both model
// clients against loopback servers) and finds it in the table: a reworded message, or a table row
// that drifted from the code, fails here.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicModelClient } from '../../src/adapters/model/anthropic-model-client.js';
import { OpenAIModelClient } from '../../src/adapters/model/openai-model-client.js';
import { openDatabase } from '../../src/adapters/storage/database.js';
import { lockDataDir } from '../../src/adapters/storage/data-dir-lock.js';
import { configWarnings, metricsWarnings, parseConfig } from '../../src/config.js';
import { loadEnvFile } from '../../src/env-file.js';
import type { ModelRequest } from '../../src/core/model-client.js';
import { startFakeAnthropicServer, type FakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';

/** The table's quoted messages, each as a pattern: `…` any text, HOST a host, N and M numbers. */
function tableMessages(): Array<{ quoted: string; pattern: RegExp }> {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const section = doc.split('\n## Troubleshooting\n')[1]!.split('\n## ')[0]!;
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return rows.flatMap((row) => [...row.split(' | ')[0]!.matchAll(/`([^`]+)`/g)].map((match) => match[1]!)).map((quoted) => {
    const source = quoted
      .split(/(…|\bHOST\b|\bN\b|\bM\b|\bNAME\b|\/path)/)
      .map((part) => ({ '…': '.*', HOST: '[^\\s/]+', N: '\\d+', M: '\\d+', NAME: '[A-Z_]+', '/path': '\\S*' })[part] ?? part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('');
    return { quoted, pattern: new RegExp(`^${source}`) };
  });
}

const table = tableMessages();
/** The row that quotes `message` (the table's start-up lines may be a log record's `msg`). */
const rowFor = (message: string) => table.find((row) => row.pattern.test(message))?.quoted;

const request: ModelRequest = { model: 'gpt-4.1', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'hi' }], tools: [], cacheKey: 's' };
const failureOf = async (call: Promise<unknown>): Promise<string> => {
  try {
    await call;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the call did not fail');
};

describe('the troubleshooting table quotes what the code prints', () => {
  let openai: FakeModelServer;
  let anthropic: FakeAnthropicServer;
  let dir: string;

  beforeAll(async () => {
    openai = await startFakeModelServer({ apiKey: 'right-key' });
    anthropic = await startFakeAnthropicServer({ apiKey: 'right-key' });
    dir = await mkdtemp(join(tmpdir(), 'hippo-troubleshooting-'));
  });

  afterAll(async () => {
    await openai.close();
    await anthropic.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reads every quoted message of the table as a pattern', () => {
    expect(table.length).toBeGreaterThan(25);
    expect(rowFor('config: SLACK_SIGNING_SECRET is required')).toBe('config: NAME …');
    expect(rowFor('nothing like any row')).toBeUndefined();
  });

  it('start-up checks: a malformed variable, the .env file, the data directory, the database, the warnings', async () => {
    const printed: string[] = [];
    const invalid = parseConfig({ PORT: 'eighty' });
    expect(invalid.ok).toBe(false);
    if (!invalid.ok) printed.push(...invalid.errors);

    const unreadable = join(dir, '.env');
    await mkdir(unreadable); // a directory where the file should be
    printed.push(await failureOf(Promise.resolve().then(() => loadEnvFile([], {}, unreadable))));

    const data = join(dir, 'data');
    await mkdir(data);
    // A live process (the one that started this test) holds the lock, as a running `npm start` would.
    await writeFile(join(data, 'hippo.lock'), `${JSON.stringify({ pid: process.ppid, hostname: hostname() })}\n`);
    printed.push(await failureOf(lockDataDir(data, './data')));

    const silent = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    printed.push(await failureOf(openDatabase({ databaseUrl: 'postgresql://hippo@127.0.0.1:1/hippo', dataDir: data, log: silent as never })));

    const parsed = parseConfig({ MCP_CONFIG: '/etc/hippo/mcp.json', TOOLS: 'web', SLACK_BOT_TOKEN: 'xoxb-1' });
    expect(parsed.ok).toBe(true);
    if (parsed.ok) printed.push(...configWarnings(parsed.config, { service: true }).map((warning) => `config-warning: ${warning}`));
    const bare = parseConfig({});
    if (bare.ok) printed.push(...[...configWarnings(bare.config, { service: true }), ...metricsWarnings(bare.config)].map((warning) => `config-warning: ${warning}`));
    const exposed = parseConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', OPENAI_BASE_URL: 'http://gateway.internal:4000/v1', DISCORD_BOT_TOKEN: 't' });
    if (exposed.ok) printed.push(...[...configWarnings(exposed.config, { service: true }), ...metricsWarnings(exposed.config)].map((warning) => `config-warning: ${warning}`));

    expect(printed.length).toBeGreaterThanOrEqual(10);
    expect(printed.filter((message) => rowFor(message) === undefined)).toEqual([]);
  });

  it('model endpoints: unreachable, without /v1, an unknown model, a wrong key, on both APIs', async () => {
    const printed: string[] = [];
    const openaiClient = (baseURL: string, apiKey = 'right-key') => new OpenAIModelClient({ apiKey, baseURL, baseDelayMs: 1, maxRetries: 0 });
    const anthropicClient = (baseURL: string, apiKey = 'right-key') => new AnthropicModelClient({ apiKey, baseURL, baseDelayMs: 1, maxRetries: 0 });
    printed.push(await failureOf(openaiClient('http://127.0.0.1:1/v1').complete(request, { role: 'worker' })));
    printed.push(await failureOf(openaiClient(openai.url.replace(/\/v1$/, '')).complete(request, { role: 'worker' })));
    openai.enqueue({ status: 404, errorMessage: 'The model `gpt-9` does not exist' });
    printed.push(await failureOf(openaiClient(openai.url).complete(request, { role: 'worker' })));
    printed.push(await failureOf(openaiClient(openai.url, 'wrong-key').complete(request, { role: 'worker' })));
    printed.push(await failureOf(anthropicClient(anthropic.url, 'wrong-key').complete({ ...request, model: 'claude-sonnet-4-5' }, { role: 'worker' })));
    printed.push(await failureOf(anthropicClient(`${anthropic.url}/v1`).complete({ ...request, model: 'claude-sonnet-4-5' }, { role: 'worker' })));

    expect(printed).toHaveLength(6);
    expect(printed.filter((message) => rowFor(message) === undefined)).toEqual([]);
  });
});
