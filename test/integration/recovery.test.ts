// R12 crash safety: sessions with backlog are driven again without a new message; pending tool
// calls run before queued steers; answered tool calls are not run twice.
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import type { ChatMessage } from '../../src/core/messages.js';
import type { Stores, ThreadAddress } from '../../src/core/store.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { StorageError } from '../../src/core/errors.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { conversation, roleOf, shape } from '../support/model-script.js';
import { startScript } from '../support/processes.js';

let database: TestDatabase;
let model: FakeModelServer;
let stores: Stores;
let harness: AgentHarness | undefined;
const executed: string[] = [];
const recorder = defineTool({
  name: 'record',
  description: 'Records its label.',
  input: z.object({ label: z.string() }),
  execute: async ({ label }) => {
    executed.push(label);
    return `recorded ${label}`;
  },
}) as AnyTool;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeModelServer();
  stores = createPrismaStores(database.prisma);
});
afterAll(async () => {
  await model.close();
  await database.drop();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  model.reset();
  executed.length = 0;
});

const call = (id: string, label: string) => ({ id, type: 'function' as const, function: { name: 'record', arguments: JSON.stringify({ label }) } });

/** Writes a session as a crashed process would have left it. */
async function crashedSession(address: ThreadAddress, tail: Array<{ message: ChatMessage; isMarker?: boolean }>, steers: string[] = []): Promise<string> {
  const { session } = await stores.sessions.open(address, { title: 't', scope: 'channel' });
  const { segment } = await stores.context.load(session.id);
  const entries: Array<{ message: ChatMessage; isMarker?: boolean; isInit?: boolean }> = [
    { message: { role: 'system', content: 'init' }, isInit: true },
    { message: { role: 'user', content: 'memory' }, isInit: true },
    ...tail,
  ];
  for (const [seq, entry] of entries.entries()) {
    await stores.context.append(segment.id, { seq, message: entry.message, isInit: entry.isInit ?? false, isMarker: entry.isMarker ?? false, memoryRunId: null });
  }
  for (const [index, text] of steers.entries()) {
    await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `console:${address.threadKey}:s${index}`, authorId: 'u', authorName: 'Ada', text });
  }
  return session.id;
}

describe('recovery at start-up (R12)', () => {
  it('runs the pending tool calls of a crashed turn before a queued steer message', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> go' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('r1', 'one')] } },
    ], ['new instructions']);
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ content: 'recovered' });
    expect(await harness.agent.recover()).toBeGreaterThanOrEqual(1);
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(executed).toEqual(['one']);
    expect(shape(conversation(model.requests[0]!.body))).toEqual(['user:go', 'assistant→[r1]', 'tool(r1)', 'user:new instructions']);
  });

  it('answers a started call of a crashed batch before a pending reset, so no reset, pause or fresh process runs it again (R6, R12)', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> launch it' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('n1', 'launch')] } },
    ]);
    const { segment } = await stores.context.load(sessionId);
    await stores.context.markToolCallStarted(segment.id, 3, 'n1');
    await stores.sessions.setFlags(sessionId, { resetRequested: true, pauseRequested: true });
    const first = await createAgentHarness({ database, model, tools: [recorder] });
    await first.agent.recover();
    await first.waitForEvent('paused', (event) => event.session.id === sessionId);
    await (await first.agent.runner(sessionId)).whenIdle();
    await first.close();
    // The batch was closed in the old segment, with the call answered "interrupted".
    const old = await database.prisma.contextMessage.findMany({ where: { segmentId: segment.id, role: 'tool' } });
    expect(old.map((row) => row.content)).toEqual([expect.stringContaining('was interrupted')]);
    expect(await database.prisma.segment.count({ where: { sessionId } })).toBe(2);
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ content: 'checked the launch' });
    await harness.agent.resume(sessionId);
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(executed).toEqual([]);
  });

  it('keeps the started-call marks on the copies a reset carries over', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> launch it' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('m1', 'launch')] } },
    ]);
    const { segment, messages } = await stores.context.load(sessionId);
    await stores.context.markToolCallStarted(segment.id, 3, 'm1');
    const marked = (await stores.context.load(sessionId)).messages;
    await stores.context.startSegment(sessionId, { fromSegmentId: segment.id, messages: marked, carriedMessages: 2, startTokens: 10, lastStep: 0 });
    const next = await stores.context.load(sessionId);
    expect(next.segment.id).not.toBe(segment.id);
    expect(next.messages.map((entry) => entry.startedToolCalls ?? [])).toEqual([[], [], [], ['m1']]);
    expect(messages).toHaveLength(4);
    // Its pending call is no backlog for the next tests' recovery.
    await database.prisma.session.delete({ where: { id: sessionId } });
  });

  it('re-sends an answer owed from before a reset with its files (R17)', async () => {
    const sender = defineTool({ name: 'send_file', description: 'Sends a file.', deliversFile: true, input: z.object({ path: z.string() }), execute: async ({ path }) => `will send ${path}` }) as AnyTool;
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> send the report' } },
      { message: { role: 'assistant', content: null, tool_calls: [{ id: 'f1', type: 'function', function: { name: 'send_file', arguments: JSON.stringify({ path: 'out/report.pdf' }) } }] } },
      { message: { role: 'tool', tool_call_id: 'f1', content: 'will send out/report.pdf' } },
    ]);
    const { segment, messages } = await stores.context.load(sessionId);
    // The answer was stored, then the process died before the chat adapter took it.
    await stores.context.append(segment.id, { seq: 5, message: { role: 'assistant', content: 'Here is the report.' }, isInit: false, isMarker: false, memoryRunId: null, awaitingDelivery: true });
    const owed = (await stores.context.load(sessionId)).messages;
    await stores.context.startSegment(sessionId, { fromSegmentId: segment.id, messages: owed, carriedMessages: owed.length - 2, startTokens: 10, lastStep: 0 });
    await stores.deliveries.markReset((await stores.context.load(sessionId)).segment.id);
    harness = await createAgentHarness({ database, model, tools: [sender] });
    await harness.agent.runner(sessionId);
    const answer = await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(answer).toMatchObject({ text: 'Here is the report.', segmentId: segment.id, seq: 5, files: [{ callId: 'f1', path: 'out/report.pdf' }] });
    expect(messages).toHaveLength(5);
    await database.prisma.session.delete({ where: { id: sessionId } });
  });

  it('runs only the calls of a partial batch that have no result yet', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> go' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('p1', 'first'), call('p2', 'second')] } },
      { message: { role: 'tool', tool_call_id: 'p1', content: 'recorded first' } },
    ]);
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ content: 'recovered' });
    await harness.agent.recover();
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(executed).toEqual(['second']);
    expect(shape(conversation(model.requests[0]!.body))).toEqual(['user:go', 'assistant→[p1,p2]', 'tool(p1)', 'tool(p2)']);
  });

  it('gives a tool result without follow-up its model call, even when a marker is last', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> go' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('m1', 'x')] } },
      { message: { role: 'tool', tool_call_id: 'm1', content: 'recorded x' } },
      { message: { role: 'user', content: '<memory-checkpoint n="1"/>' }, isMarker: true },
    ]);
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ content: 'followed up' });
    await harness.agent.recover();
    const answer = await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(answer.text).toBe('followed up');
    expect(executed).toEqual([]);
  });

  it('leaves a paused session alone and settled sessions idle', async () => {
    const paused = await crashedSession(newThread(), [{ message: { role: 'user', content: 'Ada wrote:\n> go' } }]);
    await stores.sessions.setFlags(paused, { paused: true });
    const settled = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> hi' } },
      { message: { role: 'assistant', content: 'hello' } },
    ]);
    const backlog = await stores.sessions.withBacklog();
    expect(backlog).not.toContain(paused);
    expect(backlog).not.toContain(settled);
  });
});

describe('the begin mark of a call not safe to repeat (R12)', () => {
  /** The started-call marks stored on the session's assistant message with tool calls. */
  async function storedMarks(sessionId: string): Promise<string[]> {
    const row = await database.prisma.contextMessage.findFirst({ where: { segment: { sessionId }, role: 'assistant', toolCallIds: { isEmpty: false } } });
    return row?.startedToolCallIds ?? [];
  }

  it('goes with the write before the call: the model\'s answer carries the first call\'s mark, each result the next one\'s', async () => {
    const seen: Array<{ label: string; marks: string[] }> = [];
    let sessionId = '';
    const watcher = defineTool({
      name: 'record', description: 'Records its label.', input: z.object({ label: z.string() }),
      execute: async ({ label }) => {
        seen.push({ label, marks: await storedMarks(sessionId) });
        return `recorded ${label}`;
      },
    }) as AnyTool;
    harness = await createAgentHarness({ database, model, tools: [watcher] });
    const separateMarks: string[] = [];
    const context = harness.deps.stores.context;
    const mark = context.markToolCallStarted.bind(context);
    context.markToolCallStarted = async (segmentId, seq, callId) => {
      separateMarks.push(callId);
      await mark(segmentId, seq, callId);
    };
    model.enqueue({ toolCalls: [{ id: 'b1', name: 'record', arguments: { label: 'one' } }, { id: 'b2', name: 'record', arguments: { label: 'two' } }] }, { content: 'both recorded' });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'record twice'), { startSession: true });
    sessionId = session!.id;
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    // Each call was marked before it ran, the next one not yet; no statement of its own did it.
    expect(seen).toEqual([{ label: 'one', marks: ['b1'] }, { label: 'two', marks: ['b1', 'b2'] }]);
    expect(separateMarks).toEqual([]);
  });

  it('counts as ours when the write that carried it committed but its acknowledgement was lost: the call runs, once', async () => {
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    const context = harness.deps.stores.context;
    const append = context.append.bind(context);
    let lost = 0;
    context.append = async (segmentId, entry, options) => {
      await append(segmentId, entry, options);
      if (entry.message.tool_calls?.length && lost === 0) {
        lost += 1;
        throw new StorageError('the connection dropped after the commit', true);
      }
    };
    model.enqueue({ toolCalls: [{ id: 'a1', name: 'record', arguments: { label: 'once' } }] }, { content: 'recorded once' });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'record it'), { startSession: true });
    await harness.waitForEvent('answer', (event) => event.session.id === session!.id, 20_000);
    expect(lost).toBe(1);
    expect(executed).toEqual(['once']);
    expect(await storedMarks(session!.id)).toEqual(['a1']);
    const results = await database.prisma.contextMessage.findMany({ where: { segment: { sessionId: session!.id }, role: 'tool' } });
    expect(results.map((row) => JSON.parse(row.content).content)).toEqual(['recorded once']);
  });
  it('holds a call id the database cannot store (a NUL) as stored: the call runs once, and after a crash counts as begun', async () => {
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ toolCalls: [{ id: 'n\u0000ul', name: 'record', arguments: { label: 'nul' } }] }, { content: 'recorded' });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'record it'), { startSession: true });
    await harness.waitForEvent('answer', (event) => event.session.id === session!.id);
    expect(executed).toEqual(['nul']);
    expect(await storedMarks(session!.id)).toEqual(['n\uFFFDul']);
    await harness.close();
    harness = undefined;
    executed.length = 0;
    // A process that died in such a call: the next one answers it "interrupted".
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> launch it' } },
      { message: { role: 'assistant', content: null, tool_calls: [call('z\u0000', 'launch')] } },
    ]);
    const { segment } = await stores.context.load(sessionId);
    await stores.context.markToolCallStarted(segment.id, 3, 'z\u0000');
    harness = await createAgentHarness({ database, model, tools: [recorder] });
    model.enqueue({ content: 'checked' });
    await harness.agent.recover();
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(executed).toEqual([]);
    const results = await database.prisma.contextMessage.findMany({ where: { segment: { sessionId }, role: 'tool' } });
    expect(results.map((row) => row.content)).toEqual([expect.stringContaining('was interrupted')]);
  });
});

describe('a process killed during a tool call', () => {
  it('is recovered by the next process: nothing lost or duplicated, and the interrupted call answered once, not run again', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-crash-'));
    const address = newThread();
    const sessionId = await crashedSession(address, [], ['please run the job']);
    // The job blocks the first time it runs (the process is killed then); were it run again, it would finish.
    const command = 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; if [ $n -eq 1 ]; then sleep 60; fi; echo "run $n done"';
    model.respond((body) => {
      const last = body.messages.at(-1);
      if (last?.['role'] === 'tool') return { content: 'The job is done.', usage: { promptTokens: 500, cachedTokens: 0, completionTokens: 5 } };
      return { toolCalls: [{ id: 'job_1', name: 'shell', arguments: { command } }], usage: { promptTokens: 400, cachedTokens: 0, completionTokens: 5 } };
    });
    const env = {
      DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url,
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory,shell',
      // This DATA_DIR is left behind: no loop-mounted workspace disk with it (workspace-disks.test.ts has those).
      WORKSPACE_QUOTA: 'sampler',
      // The operator lets shell commands run unasked here (R23's approvals have tests of their own).
      APPROVAL_REQUIRED: 'none',
      // The killed process's lease must expire before the next one may drive the session.
      LEASE_TTL_SECONDS: '2',
    };
    const first = startScript('src/main.ts', env);
    const workspace = join(dataDir, 'workspaces', sessionId);
    const deadline = Date.now() + 30_000;
    while ((await readFile(join(workspace, 'count'), 'utf8').catch(() => '')).trim() !== '1') {
      if (Date.now() > deadline) throw new Error(`the job never started; stderr: ${first.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.kill('SIGKILL');
    await first.exited;

    const second = startScript('src/main.ts', env);
    try {
      const deadline2 = Date.now() + 30_000;
      while (!(await database.prisma.contextMessage.findFirst({ where: { segment: { sessionId }, role: 'assistant', content: { contains: 'The job is done.' } } }))) {
        if (Date.now() > deadline2) throw new Error(`no recovery; stderr: ${second.stderr()}\n${second.lines.join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      second.kill('SIGTERM');
      await second.exited;
    }
    // A call that was running when the process died is not run again (it may be what killed it).
    expect((await readFile(join(workspace, 'count'), 'utf8')).trim()).toBe('1');
    // What the model received: the steer once, the tool call once, its result once.
    const final = model.requests.filter((request) => request.body.messages.at(-1)?.['role'] === 'tool');
    expect(final).toHaveLength(1);
    const messages = conversation(final[0]!.body);
    expect(shape(messages)).toEqual(['user:please run the job', 'assistant→[job_1]', 'tool(job_1)']);
    expect(String(messages[2]?.['content'])).toContain('this call was interrupted (the service stopped or crashed as it began or while it ran) and was not run again');
    const rows = await database.prisma.contextMessage.findMany({ where: { segment: { sessionId }, isInit: false }, orderBy: { seq: 'asc' } });
    expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(await database.prisma.steerMessage.count({ where: { sessionId, status: 'queued' } })).toBe(0);
  }, 90_000);
});

describe('a page that takes the process down', () => {
  it('is fetched once: after the crash the call is answered "interrupted", not fetched again, and the session answers', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-poison-'));
    const address = newThread();
    const sessionId = await crashedSession(address, [], ['summarise the page']);
    let service: ReturnType<typeof startScript> | undefined;
    let fetches = 0;
    // The "page": every request to it kills the process that fetched it (as a heap blow-up would).
    const page = createServer((_request, response) => {
      fetches += 1;
      service?.kill('SIGKILL');
      response.destroy();
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/poison.html`;
    model.respond((body) => (body.messages.at(-1)?.['role'] === 'tool'
      ? { content: 'That page could not be read.', usage: { promptTokens: 500, cachedTokens: 0, completionTokens: 5 } }
      : { toolCalls: [{ id: 'fetch_1', name: 'web_fetch', arguments: { url } }], usage: { promptTokens: 400, cachedTokens: 0, completionTokens: 5 } }));
    const env = {
      DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url,
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory,web', WEB_FETCH_ALLOW_PRIVATE: 'true', LEASE_TTL_SECONDS: '2',
    };
    try {
      service = startScript('src/main.ts', env);
      const { signal } = await service.exited;
      expect(signal).toBe('SIGKILL');
      expect(fetches).toBe(1);
      service = startScript('src/main.ts', env);
      const deadline = Date.now() + 30_000;
      while (!(await database.prisma.contextMessage.findFirst({ where: { segment: { sessionId }, role: 'assistant', content: { contains: 'That page could not be read.' } } }))) {
        if (Date.now() > deadline) throw new Error(`no recovery; stderr: ${service.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(fetches).toBe(1);
      expect(service.child.exitCode).toBeNull();
      const result = await database.prisma.contextMessage.findFirstOrThrow({ where: { segment: { sessionId }, role: 'tool' } });
      expect(result.content).toContain('was not run again');
    } finally {
      service?.kill('SIGTERM');
      await service?.exited;
      await new Promise<void>((resolve) => page.close(() => resolve()));
    }
  }, 90_000);
});

describe('a context too large to send', () => {
  it('ends in a note at recovery, measured before it is serialized: nothing is sent and the service goes on', async () => {
    const sessionId = await crashedSession(newThread(), [{ message: { role: 'user', content: `Ada wrote:\n> ${'x'.repeat(60_000)}` } }]);
    harness = await createAgentHarness({ database, model, settings: { requestMaxChars: 50_000 } });
    await harness.agent.recover();
    const note = await harness.waitForEvent('error', (event) => event.session.id === sessionId);
    expect(note.error).toMatchObject({ code: 'model', retryable: false, message: expect.stringMatching(/^the request is too large to send/) });
    await (await harness.agent.runner(sessionId)).whenIdle();
    expect(model.requests.filter((request) => request.body.prompt_cache_key === sessionId)).toHaveLength(0);
  });
});

describe('an image in the context', () => {
  it('counts by its bytes in the context measure (R2), beyond what the provider reports for it', async () => {
    // A real image (the fake refuses bytes that do not decode, as OpenAI does, R22): 2.56 million characters of base64.
    const noise = await sharp(randomBytes(800 * 800 * 3), { raw: { width: 800, height: 800, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer();
    const url = `data:image/png;base64,${noise.toString('base64')}`;
    const sessionId = await crashedSession(newThread(), [{ message: { role: 'user', content: [{ type: 'text', text: 'Ada wrote:\n> look' }, { type: 'image_url', image_url: { url } }] } }]);
    harness = await createAgentHarness({ database, model });
    // Memory forks may run beside the worker (the image fills a tenth of the window): only the worker reports 1,500.
    model.respond((body) => (roleOf(body) === 'worker' ? { content: 'Seen.', usage: { promptTokens: 1_500, cachedTokens: 0, completionTokens: 2 } } : { content: 'KEEP_CONTEXT' }));
    await harness.agent.recover();
    const answer = await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    const segment = await database.prisma.segment.findUniqueOrThrow({ where: { id: answer.segmentId } });
    // 1,500 reported (an image at about 1,000) + the image's 10,001 tokens by its bytes - those 1,000.
    expect(segment.contextTokens).toBe(1_500 + Math.ceil(url.length / 256) - 1_000);
  });
});

describe('answers and notes owed after a crash', () => {
  it('emits an answer again until a chat adapter marks it delivered', async () => {
    const sessionId = await crashedSession(newThread(), [{ message: { role: 'user', content: 'Ada wrote:\n> hi' } }]);
    const first = await createAgentHarness({ database, model });
    model.enqueue({ content: 'the answer' });
    await first.agent.recover();
    const answer = await first.waitForEvent('answer', (event) => event.session.id === sessionId);
    await (await first.agent.runner(sessionId)).whenIdle();
    await first.close(); // "crashed" before any adapter took the answer

    const second = await createAgentHarness({ database, model });
    await second.agent.recover();
    const again = await second.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect([again.text, again.segmentId, again.seq]).toEqual([answer.text, answer.segmentId, answer.seq]);
    await second.agent.delivered(again);
    await second.close();

    harness = await createAgentHarness({ database, model });
    await harness.agent.recover();
    await (await harness.agent.runner(sessionId)).whenIdle();
    expect(harness.events.filter((event) => event.type === 'answer' && event.session.id === sessionId)).toHaveLength(0);
    expect(model.requests.filter((request) => request.body.prompt_cache_key === sessionId)).toHaveLength(1);
  });

  it('emits a reset note again until a chat adapter marks it delivered (R17)', async () => {
    const sessionId = await crashedSession(newThread(), [
      { message: { role: 'user', content: 'Ada wrote:\n> hi' } },
      { message: { role: 'assistant', content: 'hello' } },
    ]);
    const first = await createAgentHarness({ database, model });
    expect(await first.agent.reset(sessionId)).toBe(true);
    const note = await first.waitForEvent('context-reset', (event) => event.session.id === sessionId);
    await (await first.agent.runner(sessionId)).whenIdle();
    await first.close(); // "crashed" before any adapter took the note

    const second = await createAgentHarness({ database, model });
    await second.agent.recover();
    const again = await second.waitForEvent('context-reset', (event) => event.session.id === sessionId);
    expect([again.segmentId, again.segmentOrdinal, again.carriedMessages]).toEqual([note.segmentId, 2, note.carriedMessages]);
    await second.agent.delivered(again);
    await second.close();

    harness = await createAgentHarness({ database, model });
    await harness.agent.recover();
    await (await harness.agent.runner(sessionId)).whenIdle();
    expect(harness.events.filter((event) => event.type === 'context-reset' && event.session.id === sessionId)).toHaveLength(0);
  });
});
