// `npm run chat` driven through its stdin/stdout against the fake model server.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeModelServer, type FakeModelServer, type RecordedRequest } from '../fakes/fake-model-server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { conversation, shape } from '../support/model-script.js';
import { startScript, type RunningProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

let model: FakeModelServer;
let database: TestDatabase;
const running: RunningProcess[] = [];

beforeAll(async () => {
  model = await startFakeModelServer();
});
// A database per test: the terminal has one thread per database, and an earlier test's context
// there would make memory forks take the replies a test queued for its worker.
beforeEach(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  for (const chat of running.splice(0)) chat.kill('SIGKILL');
  model.reset();
  await database.drop();
});
afterAll(async () => {
  await model.close();
});

// Generous: starting the chat on an embedded database takes seconds, more on a loaded machine.
async function waitForOutput(read: () => string, pattern: RegExp, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(read())) {
    if (Date.now() > deadline) throw new Error(`output never matched ${pattern}:\n${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Chat Completions calls only (the chat also looks at GET /models once at start). */
function completions(): RecordedRequest[] {
  return model.requestsWhere((request) => request.path === '/v1/chat/completions');
}

async function chatEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-chat-')),
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: model.url,
    MODEL: 'test-model',
    MODEL_CONTEXT_WINDOW: '100000',
    ...extra,
  };
}

function startChat(env: Record<string, string>): { chat: RunningProcess; output: () => string; type: (line: string) => void } {
  const chat = startScript('src/chat.ts', env);
  running.push(chat);
  return { chat, output: () => chat.lines.join('\n'), type: (line) => void chat.child.stdin?.write(`${line}\n`) };
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
    const { chat, output, type } = startChat(await chatEnv({ DATABASE_URL: database.url }));
    await waitForOutput(output, /Commands: \/pause/);
    type('hello there');
    await model.waitFor((request) => request.path === '/v1/chat/completions', { timeoutMs: 20_000 });
    type('and also this'); // arrives while the model is still answering
    await waitForOutput(output, /hippo> Got your follow-up too\./);
    expect(output()).toContain('hippo> Hello! I am thinking about it.');
    expect(shape(conversation(completions()[1]!.body)).slice(-2)).toEqual(['assistant:Hello! I am thinking about it.', 'user:and also this']);

    type('/status');
    await waitForOutput(output, /state \w+ · context [\d.]+% .*\n.*cache \d+%/);
    expect(output()).toMatch(/cache 87%/); // (1024 + 1152) / (1200 + 1300)
    await waitForOutput(output, /memory: next checkpoint at \d+% of the window \(\d+ tokens from now\) · summarizer calls \d+ · resets 0/);
    type('/memory');
    await waitForOutput(output, /--- MAIN\.md \(v1\) ---/);
    type('/quit');
    expect((await chat.exited).code).toBe(0);
  }, 60_000);

  it('reviews memory like Slack and Discord: /remember, /forget, /revert, /history, /search', async () => {
    model.enqueue({ content: 'Hi, noted.' });
    const { chat, output, type } = startChat(await chatEnv({ DATABASE_URL: database.url }));
    await waitForOutput(output, /Commands: \/pause .*\/remember <fact> \/forget <fact> \/pin <text> \/revert \/history \[document\] \/search <words> \/export \[file\.zip\]/);
    type('hello, the deploy window is Tuesday');
    await waitForOutput(output, /hippo> Hi, noted\./);
    type('/remember');
    await waitForOutput(output, /^ {2}Say what to remember: \/remember <fact>\.$/m);
    type('/remember deploys happen on Tuesdays');
    await waitForOutput(output, /^ {2}🧠 Asked background memory to remember: “deploys happen on Tuesdays”\./m);
    // The summarizer run it asked for carries the request to the model.
    await model.waitFor((request) => request.rawBody.includes('deploys happen on Tuesdays'), { timeoutMs: 20_000 });
    type('/forget');
    await waitForOutput(output, /^ {2}Say what to forget: \/forget <fact>\. To undo the last memory change, say \/revert\.$/m);
    type('/history');
    await waitForOutput(output, /^ {2}History of MAIN\.md\n {2}• v1 · \d{4}-\d\d-\d\d \d\d:\d\d UTC · /m);
    type('/history nothing.md');
    await waitForOutput(output, /^ {2}no document nothing\.md \(\/memory lists them\)$/m);
    type('/search tuesday');
    // The hit names its session by title; Markdown is rendered (no raw markers outside a terminal).
    await waitForOutput(output, /^ {2}🔎 Memory matching “tuesday”:\n {2}Conversations\n {2}• “[^”\n]*” \(user, context \d+\): .*the deploy window is Tuesday/m);
    type('/revert');
    await waitForOutput(output, /^ {2}(There is no memory change to undo in this space\.|↩️ Undid |The last memory change is )/m);
    type('/quit');
    expect((await chat.exited).code).toBe(0);
  }, 90_000);

  it('npm run memory:export names the terminal chat\'s workspace, `local`', async () => {
    const usage = startScript('scripts/memory-export.ts', {});
    expect((await usage.exited).code).toBe(2);
    expect(usage.stderr()).toContain("The terminal chat's workspace is `local`: npm run memory:export -- --platform console --workspace local");
    const listing = startScript('scripts/memory-export.ts', { DATABASE_URL: database.url, LOG_LEVEL: 'silent' }, ['--platform', 'console', '--workspace', 'terminal']);
    expect((await listing.exited).code).toBe(0);
    expect(listing.lines).toEqual(["no memory space of console terminal has documents (the terminal chat's workspace is `local`)"]);
  }, 60_000);

  it('says when a message typed during a run is queued and when it is taken, and what the agent is doing', async () => {
    model.enqueue(
      { toolCalls: [{ name: 'todo_write', arguments: { content: '- [ ] look' } }], delayMs: 800 },
      { content: 'Noted both.' },
    );
    const { output, type } = startChat(await chatEnv({ DATABASE_URL: database.url }));
    await waitForOutput(output, /Commands: \/pause/);
    type('start the task');
    await model.waitFor((request) => request.path === '/v1/chat/completions', { timeoutMs: 20_000 });
    type('one more thing');
    await waitForOutput(output, /hippo> Noted both\./);
    const lines = output().split('\n');
    const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
    expect(at(/^ {2}↳ queued, will be read at the next step$/)).toBeGreaterThan(at(/^ {2}… thinking$/));
    expect(at(/^ {2}↳ taken: “one more thing”$/)).toBeGreaterThan(at(/^ {2}✓ /));
    // Between the tool result and the answer, the agent says it is thinking again.
    expect(lines.slice(at(/^ {2}✓ /), at(/^hippo> Noted both/)).some((line) => line === '  … thinking')).toBe(true);
    expect(shape(conversation(completions()[1]!.body)).at(-1)).toBe('user:one more thing');
  }, 60_000);

  it('keeps log records out of the conversation: in DATA_DIR/chat.log, with one short line for warnings', async () => {
    const keyed = await startFakeModelServer({ apiKey: 'right-key' });
    try {
      const env = await chatEnv({ DATABASE_URL: database.url, OPENAI_BASE_URL: keyed.url, OPENAI_API_KEY: 'wrong-key', LOG_LEVEL: 'info' });
      const { chat, output, type } = startChat(env);
      const logPath = join(env['DATA_DIR']!, 'chat.log');
      await waitForOutput(output, /model-endpoint-unauthorized/);
      expect(output()).toContain(`log: ${logPath}`);
      expect(output()).toMatch(/^ {2}⚠ model-endpoint-unauthorized: model endpoint 127\.0\.0\.1:\d+\/v1 answered 401 Incorrect API key provided: check OPENAI_API_KEY$/m);
      type('/nonsense');
      await waitForOutput(output, /unknown command \/nonsense \(\/help lists them\)/);
      type('/quit');
      expect((await chat.exited).code).toBe(0);
      expect(chat.lines.filter((line) => line.startsWith('{'))).toEqual([]);
      expect(chat.stderr()).toBe('');
      const records = readFileSync(logPath, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { msg: string });
      expect(records.map((record) => record.msg)).toContain('agent-ready');
    } finally {
      await keyed.close();
    }
  }, 60_000);

  it('gives up on a hung model after MODEL_TOTAL_TIMEOUT_SECONDS and says so in the thread', async () => {
    model.respond(() => ({ hang: true }));
    const { chat, output, type } = startChat(await chatEnv({ DATABASE_URL: database.url, MODEL_TIMEOUT_SECONDS: '1', MODEL_MAX_ATTEMPTS: '20', MODEL_TOTAL_TIMEOUT_SECONDS: '2' }));
    await waitForOutput(output, /Commands: \/pause/);
    type('are you there?');
    await waitForOutput(output, /✗ .*\(\/resume to try again\)/);
    expect(output()).toMatch(/^ {2}✗ model endpoint 127\.0\.0\.1:\d+\/v1 gave no answer within 2 s \(MODEL_TOTAL_TIMEOUT_SECONDS\) over [12] attempt\(s\); last: .* \(\/resume to try again\)$/m);
    expect(completions().length).toBeLessThanOrEqual(2); // not the 20 attempts allowed
    type('/quit');
    expect((await chat.exited).code).toBe(0);
  }, 60_000);

  it('stops a hanging model call at once with /stop, and /resume continues', async () => {
    model.enqueue({ hang: true });
    model.enqueue({ content: 'answered after the stop' });
    const { chat, output, type } = startChat(await chatEnv({ DATABASE_URL: database.url }));
    await waitForOutput(output, /Commands: \/pause \/stop/);
    type('write a long report');
    await until(() => completions().length === 1, 30_000, 'the hanging model call');
    type('/stop');
    await waitForOutput(output, /⏹ stopped by you \(\/resume to continue\)/);
    expect(completions()).toHaveLength(1);
    type('/resume');
    await waitForOutput(output, /answered after the stop/);
    type('/quit');
    expect((await chat.exited).code).toBe(0);
  }, 60_000);

  for (const signal of ['SIGINT', 'SIGKILL'] as const) {
    it(`resumes the task interrupted by ${signal} when the chat starts again (embedded database)`, async () => {
      // A lease far longer than the test: only the embedded database's own knowledge that the
      // holder is gone (it held the DATA_DIR lock) lets the next start resume at once.
      const env = await chatEnv({ LEASE_TTL_SECONDS: '600' });
      model.enqueue({ hang: true });
      const first = startChat(env);
      await waitForOutput(first.output, /Commands: \/pause/);
      first.type('do the long task');
      await model.waitFor((request) => request.path === '/v1/chat/completions', { timeoutMs: 20_000 });
      first.chat.kill(signal);
      const { code } = await first.chat.exited;
      if (signal === 'SIGINT') {
        // Ctrl-C: a clean stop that says what will happen.
        expect(code).toBe(0);
        expect(first.output()).toContain('stopping: an unfinished task continues when you start the chat again');
        expect(existsSync(join(env['DATA_DIR']!, 'hippo.lock'))).toBe(false);
      }

      model.enqueue({ content: 'Done with the long task.' });
      const second = startChat(env);
      await waitForOutput(second.output, /hippo> Done with the long task\./);
      expect(second.output()).toMatch(/↻ resuming the task that was interrupted\n {2}… thinking\nhippo> Done/);
      expect(shape(conversation(completions().at(-1)!.body)).at(-1)).toBe('user:do the long task');
      second.type('/quit');
      expect((await second.chat.exited).code).toBe(0);
    }, 120_000);
  }
});
