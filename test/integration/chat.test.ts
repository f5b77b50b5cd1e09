// `npm run chat` driven through its stdin/stdout against the fake model server.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { conversation, shape } from '../support/model-script.js';
import { startScript } from '../support/processes.js';

let model: FakeModelServer;
let database: TestDatabase;

beforeAll(async () => {
  model = await startFakeModelServer();
  database = await createTestDatabase();
});
afterAll(async () => {
  await model.close();
  await database.drop();
});

async function waitForOutput(read: () => string, pattern: RegExp, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(read())) {
    if (Date.now() > deadline) throw new Error(`output never matched ${pattern}:\n${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('npm run chat', () => {
  it('names what to set when the model settings are missing', async () => {
    const chat = startScript('src/chat.ts', { DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-chat-')) });
    const { code } = await chat.exited;
    expect(code).toBe(1);
    expect(chat.stderr()).toMatch(/^config: OPENAI_API_KEY is required.*\nconfig: MODEL is required.*\n$/);
  });

  it('streams answers, takes steering while working, and answers /status, /memory and /quit', async () => {
    model.enqueue(
      { content: 'Hello! I am thinking about it.', delayMs: 600, usage: { promptTokens: 1200, cachedTokens: 1024, completionTokens: 9 } },
      { content: 'Got your follow-up too.', usage: { promptTokens: 1300, cachedTokens: 1152, completionTokens: 6 } },
    );
    const chat = startScript('src/chat.ts', {
      DATABASE_URL: database.url,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.url,
      MODEL: 'test-model',
      MODEL_CONTEXT_WINDOW: '100000',
    });
    const output = () => chat.lines.join('\n');
    await waitForOutput(output, /Commands: \/pause/);
    chat.child.stdin?.write('hello there\n');
    await model.waitForRequests(1, { timeoutMs: 20_000 });
    chat.child.stdin?.write('and also this\n'); // arrives while the model is still answering
    await waitForOutput(output, /hippo> Got your follow-up too\./);
    expect(output()).toContain('hippo> Hello! I am thinking about it.');
    expect(shape(conversation(model.requests[1]!.body)).slice(-2)).toEqual(['assistant:Hello! I am thinking about it.', 'user:and also this']);

    chat.child.stdin?.write('/status\n');
    await waitForOutput(output, /state \w+ · context [\d.]+% .*\n.*cache \d+%/);
    expect(output()).toMatch(/cache 87%/); // (1024 + 1152) / (1200 + 1300)
    chat.child.stdin?.write('/memory\n');
    await waitForOutput(output, /--- MAIN\.md \(v1\) ---/);
    chat.child.stdin?.write('/quit\n');
    expect((await chat.exited).code).toBe(0);
  }, 60_000);
});
