// What `npm start` tells the operator at start-up: settings that do not do what was meant, the
// model endpoint's state (log and /readyz), and a .env file read from the working directory.
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startScript, type RunningProcess } from '../support/processes.js';

let database: TestDatabase;
let model: FakeModelServer;
const running: RunningProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeModelServer({ apiKey: 'right-key' });
});
afterEach(async () => {
  for (const service of running.splice(0)) {
    service.kill('SIGTERM');
    await service.exited;
  }
});
afterAll(async () => {
  await model.close();
  await database.drop();
});

function start(env: Record<string, string>, options: Parameters<typeof startScript>[3] = {}): RunningProcess {
  const service = startScript('src/main.ts', { PORT: '0', ...env }, [], options);
  running.push(service);
  return service;
}

async function readiness(port: unknown): Promise<{ status: number; body: { checks: Record<string, unknown> } }> {
  const response = await fetch(`http://127.0.0.1:${String(port)}/readyz`);
  return { status: response.status, body: (await response.json()) as { checks: Record<string, unknown> } };
}

const modelEnv = () => ({ DATABASE_URL: database.url, OPENAI_BASE_URL: model.url, MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '100000', DISCORD_BOT_TOKEN: '' });

describe('npm start', () => {
  it('warns when no chat platform is configured and when MCP_CONFIG is ignored', async () => {
    const service = start({ DATABASE_URL: database.url, MCP_CONFIG: '/etc/hippo/mcp.json' });
    const mcp = await service.waitForLog(/^config-warning: MCP_CONFIG/);
    expect(mcp['level']).toBe(40);
    expect(mcp['msg']).toBe('config-warning: MCP_CONFIG is set but TOOLS (memory,workspace,web) does not include mcp: its servers are not started; add mcp to TOOLS');
    const platforms = await service.waitForLog(/^config-warning: no chat platform/);
    expect(platforms['msg']).toMatch(/set SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN/);
    await service.waitForLog(/^service-started/);
  });

  it('reports a refused model key in the log and as not ready, without blocking start-up', async () => {
    const service = start({ ...modelEnv(), OPENAI_API_KEY: 'wrong-key' });
    const started = await service.waitForLog(/^service-started/);
    const warning = await service.waitForLog(/^model-endpoint-unauthorized/);
    expect(warning['msg']).toMatch(/^model-endpoint-unauthorized: model endpoint 127\.0\.0\.1:\d+\/v1 answered 401 Incorrect API key provided: check OPENAI_API_KEY$/);
    const ready = await readiness(started['port']);
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toMatchObject({ database: true, model: 'unauthorized' });
  });

  it('is ready with model: ok when the endpoint takes the key', async () => {
    const service = start({ ...modelEnv(), OPENAI_API_KEY: 'right-key' });
    const started = await service.waitForLog(/^service-started/);
    await service.waitForLog(/^model-endpoint-ok$/);
    const ready = await readiness(started['port']);
    expect(ready).toMatchObject({ status: 200, body: { checks: { database: true, model: 'ok' } } });
  });

  it('stays ready but says unreachable when nothing answers at OPENAI_BASE_URL', async () => {
    const gone = await startFakeModelServer();
    await gone.close();
    const service = start({ ...modelEnv(), OPENAI_API_KEY: 'right-key', OPENAI_BASE_URL: gone.url });
    const started = await service.waitForLog(/^service-started/);
    const warning = await service.waitForLog(/^model-endpoint-unreachable/);
    expect(warning['msg']).toMatch(/^model-endpoint-unreachable: cannot reach the model endpoint 127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\): check OPENAI_BASE_URL and that the server is running$/);
    const ready = await readiness(started['port']);
    expect(ready).toMatchObject({ status: 200, body: { checks: { model: 'unreachable' } } });
  });

  it('looks at the Anthropic API with MODEL_PROVIDER=anthropic: a refused key names ANTHROPIC_API_KEY, a taken one is ready', async () => {
    const anthropic = await startFakeAnthropicServer({ apiKey: 'sk-ant-right' });
    try {
      const env = { ...modelEnv(), OPENAI_BASE_URL: '', MODEL_CONTEXT_WINDOW: '', MODEL_PROVIDER: 'anthropic', ANTHROPIC_BASE_URL: anthropic.url, MODEL: 'claude-sonnet-4-5' };
      const refused = start({ ...env, ANTHROPIC_API_KEY: 'sk-ant-wrong' });
      const warning = await refused.waitForLog(/^model-endpoint-unauthorized/, 60_000);
      expect(warning['msg']).toMatch(/^model-endpoint-unauthorized: model endpoint 127\.0\.0\.1:\d+ answered 401 authentication_error: invalid x-api-key: check ANTHROPIC_API_KEY$/);
      const started = await refused.waitForLog(/^service-started/);
      expect((await readiness(started['port'])).body.checks).toMatchObject({ model: 'unauthorized' });
      expect(refused.lines.join('\n')).not.toContain('sk-ant-wrong');
      const taken = start({ ...env, ANTHROPIC_API_KEY: 'sk-ant-right' });
      const ready = await taken.waitForLog(/^agent-ready/, 60_000); // loads the Anthropic SDK: slow on a busy machine
      expect(ready).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5', contextWindow: 200_000, images: true });
      await taken.waitForLog(/^model-endpoint-ok$/, 60_000);
      expect(anthropic.modelListings).toBe(2);
    } finally {
      await anthropic.close();
    }
  }, 200_000); // two services start one after the other

  it('says in one line that PORT is taken, instead of Node\'s bare EADDRINUSE', async () => {
    const { createServer } = await import('node:http');
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '0.0.0.0', resolve));
    try {
      const port = (squatter.address() as { port: number }).port;
      const service = start({ ...modelEnv(), OPENAI_API_KEY: 'right-key', PORT: String(port), LOG_LEVEL: 'silent' });
      expect((await service.exited).code).toBe(1);
      expect(service.stderr()).toBe(`config: PORT ${port} is already in use by another program: stop it or set PORT to a free port\n`);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it('reads .env from its working directory, with the real environment winning', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'hippo-dotenv-'));
    const dataDir = join(directory, 'from-dotenv');
    await writeFile(join(directory, '.env'), `# as copied from .env.example\nDATA_DIR=${dataDir}\nMEMORY_SCOPE=planet\nDATABASE_URL=\nLOG_LEVEL=info\n`);
    const service = start({ MEMORY_SCOPE: 'thread' }, { cwd: directory, envFile: true });
    const loaded = await service.waitForLog(/^env-file-loaded$/);
    expect(loaded['path']).toBe(join(directory, '.env'));
    // MEMORY_SCOPE=planet would stop start-up: the environment's value won. (A fresh PGlite applies
    // every migration first: slow on a loaded machine.)
    expect((await service.waitForLog(/^storage-ready$/, 90_000))['storage']).toBe('pglite');
    expect(existsSync(join(dataDir, 'hippo.lock'))).toBe(true);
  }, 120_000);

  it('reports an invalid value from .env like any other, and an empty variable does not hide the file', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'hippo-dotenv-'));
    await writeFile(join(directory, '.env'), 'PORT=eighty\n');
    const invalid = start({ PORT: '' }, { cwd: directory, envFile: true });
    expect((await invalid.exited).code).toBe(1);
    expect(invalid.stderr()).toMatch(/^config: PORT [^\n]*\n$/);
  });
});
