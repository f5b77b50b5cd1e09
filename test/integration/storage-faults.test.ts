// Database faults on real Postgres (docs/product.md: database errors are survived; spec R17, R18): the
// database is taken away (new connections refused, open ones dropped) at the worst moments; the
// session finishes by itself, nothing is lost, nothing is done or delivered twice.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorNoteText } from '../../src/adapters/chat/notes.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { z } from 'zod';
import type { AgentEvent } from '../../src/core/events.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { takeDatabaseAway, outage } from '../support/database-faults.js';
import { at, gate, requestsOf, scriptRoles } from '../support/model-script.js';
import { startScript } from '../support/processes.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';
import { arrive } from '../support/sessions.js';

const bed = useTestBed();

/** A tool that counts its runs and waits for the test before it returns. */
function countedTool(): { tool: AnyTool; runs: () => number; started: () => boolean; open: () => void } {
  const toolGate = gate();
  let runs = 0;
  const tool = defineTool({
    name: 'deploy', description: 'Deploys (must not run twice).', input: z.object({}),
    execute: async () => {
      runs += 1;
      await toolGate.promise;
      return `deployed (run ${runs})`;
    },
  }) as AnyTool;
  return { tool, runs: () => runs, started: () => runs > 0, open: toolGate.open };
}

function answersOf(h: AgentHarness, sessionId: string): Array<Extract<AgentEvent, { type: 'answer' }>> {
  return h.events.filter((event): event is Extract<AgentEvent, { type: 'answer' }> => event.type === 'answer' && event.session.id === sessionId);
}

describe('storage faults', () => {
  it('stores a tool result computed while the database was away once it is back, without running the tool again', async () => {
    const deploy = countedTool();
    const h = await bed.harness({ tools: [deploy.tool], settings: { contextWindow: 100_000 } });
    scriptRoles(bed.model, {
      worker: [at(300, { toolCalls: [{ id: 'd1', name: 'deploy', arguments: {} }] }), at(320, { content: 'Deployed once.' })],
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'deploy it'), { startSession: true });
    await until(deploy.started, 10_000, 'tool start');
    // The failover happens while the tool runs; the tool finishes before the database is back.
    const away = await takeDatabaseAway(bed.database.name);
    deploy.open();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await away.restore();
    await h.waitForEvent('answer', (event) => event.session.id === session!.id, 20_000);
    expect(deploy.runs()).toBe(1);
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(2);
    expect(answersOf(h, session!.id).map((event) => event.text)).toEqual(['Deployed once.']);
    const rows = await bed.database.prisma.contextMessage.findMany({ where: { segment: { sessionId: session!.id }, role: 'tool' } });
    expect(rows.map((row) => JSON.parse(row.content).content)).toEqual(['deployed (run 1)']);
    const ends = h.events.filter((event) => event.type === 'run-end' && event.session.id === session!.id).map((event) => (event as { reason: string }).reason);
    expect(ends).toEqual(['storage', 'idle']);
  });

  it('names a database error that waiting will not cure as such: the run stops, and the thread is not told the database is away', async () => {
    // A refusal no retry can pass (as a tsvector past its 1 MiB limit was): a check the tool's result breaks.
    await bed.database.prisma.$executeRawUnsafe(`ALTER TABLE context_messages ADD CONSTRAINT test_refuses_poison CHECK (search_text NOT LIKE '%poison-pill%') NOT VALID`);
    try {
      const poison = defineTool({ name: 'poison', description: 'Returns what the database refuses.', input: z.object({}), execute: async () => 'a poison-pill result' }) as AnyTool;
      const h = await bed.harness({ tools: [poison], settings: { contextWindow: 100_000 } });
      scriptRoles(bed.model, { worker: [at(300, { toolCalls: [{ id: 'p1', name: 'poison', arguments: {} }] })] });
      const { session } = await h.agent.submit(personMessage(newThread(), 'go'), { startSession: true });
      const failed = await h.waitForEvent('error', (event) => event.session.id === session!.id, 20_000);
      expect(failed.error).toMatchObject({ code: 'storage', retryable: false });
      expect(errorNoteText(failed.error, '@hippo resume')).toBe('⚠️ I stopped because of a database error (details are in the service log).\nNothing is lost: say `@hippo resume` to continue from here.');
    } finally {
      await bed.database.prisma.$executeRawUnsafe('ALTER TABLE context_messages DROP CONSTRAINT test_refuses_poison');
    }
  });

  it('stores a model answer received while the database was away, without asking the model again', async () => {
    const answerGate = gate();
    const h = await bed.harness({ settings: { contextWindow: 100_000 } });
    scriptRoles(bed.model, {
      worker: async () => {
        await answerGate.promise;
        return at(300, { content: 'Paid for once.' });
      },
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'question'), { startSession: true });
    await until(() => requestsOf(bed.model.requests, 'worker').length === 1, 10_000, 'model call');
    const away = await takeDatabaseAway(bed.database.name);
    answerGate.open();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await away.restore();
    await h.waitForEvent('answer', (event) => event.session.id === session!.id, 20_000);
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(1);
    expect(answersOf(h, session!.id).map((event) => event.text)).toEqual(['Paid for once.']);
    const stored = await bed.database.prisma.contextMessage.count({ where: { segment: { sessionId: session!.id }, role: 'assistant' } });
    expect(stored).toBe(1);
    // The paid call is recorded once, with the answer it was held with (R14).
    const calls = await bed.database.prisma.modelCall.findMany({ where: { sessionId: session!.id, role: 'worker' } });
    expect(calls.map((call) => [call.promptTokens, call.error])).toEqual([[300, null]]);
  });

  it('records a summarizer that ended while the database was away once it is back (R18): its note comes once', async () => {
    const summarizerGate = gate();
    const h = await bed.harness({ settings: { contextWindow: 10_000 } });
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'done' })],
      summarizer: async (_body, index) => {
        if (index === 0) return { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nShips on Fridays.\n', expected_version: 1 } }] };
        await summarizerGate.promise;
        return { content: 'wrote MAIN.md' };
      },
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await h.waitForEvent('answer', (event) => event.session.id === session!.id);
    await until(() => requestsOf(bed.model.requests, 'summarizer').length === 2, 10_000, 'second summarizer step');
    const away = await takeDatabaseAway(bed.database.name);
    summarizerGate.open();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(runner.memory.summarizerRunning).toBe(true); // still recording its outcome
    await away.restore();
    await runner.memory.settle();
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session!.id, role: 'summarizer' } });
    expect(run.status).toBe('succeeded');
    expect(h.events.filter((event) => event.type === 'memory-updated' && event.session.id === session!.id)).toHaveLength(1);
  });

  it('records a summarizer that failed while the database was away as failed once it is back, and the worker goes on (R18)', async () => {
    const summarizerGate = gate();
    const summarizerAsked = gate();
    const h = await bed.harness({ settings: { contextWindow: 10_000 } });
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'done' }), at(420, { content: 'still here' })],
      summarizer: async () => {
        summarizerAsked.open();
        await summarizerGate.promise;
        return { status: 400, errorMessage: 'bad request' };
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await h.waitForEvent('answer', (event) => event.session.id === session!.id);
    // The run is stored before its first request (a checkpoint that met the outage forks nothing).
    await summarizerAsked.promise;
    const away = await takeDatabaseAway(bed.database.name);
    summarizerGate.open();
    await h.waitForEvent('memory-run-failed', (event) => event.session.id === session!.id);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await away.restore();
    await runner.memory.settle();
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session!.id, role: 'summarizer' } });
    expect(run).toMatchObject({ status: 'failed' });
    await h.agent.submit(personMessage(thread, 'more'), { startSession: false });
    await h.waitForEvent('answer', (event) => event.text === 'still here');
  });

  it('carries out a reset whose transaction met the outage, once, and goes on (R6)', async () => {
    const h = await bed.harness({ settings: { contextWindow: 10_000 } });
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'first' }), at(300, { content: 'after the reset' })],
      decider: [{ content: 'Finished work.\nRESET_CONTEXT' }],
    });
    const startSegment = h.stores.context.startSegment.bind(h.stores.context);
    let attempts = 0;
    h.stores.context.startSegment = async (...args) => {
      attempts += 1;
      // The first attempt meets a failover that lasts a second and a half.
      if (attempts === 1) void outage(bed.database.name, 1_500);
      if (attempts === 1) await new Promise((resolve) => setTimeout(resolve, 200));
      return startSegment(...args);
    };
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
    await h.waitForEvent('context-reset', (event) => event.session.id === session!.id, 20_000);
    // Retried with back-off, not in a tight loop: a handful of attempts over the 1.5 s outage.
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(5);
    await h.agent.submit(personMessage(thread, 'and now?'), { startSession: false });
    await h.waitForEvent('answer', (event) => event.text === 'after the reset', 20_000);
    expect(await bed.database.prisma.segment.count({ where: { sessionId: session!.id } })).toBe(2);
    expect(h.events.filter((event) => event.type === 'context-reset' && event.session.id === session!.id)).toHaveLength(1);
    expect((await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).resetRequested).toBe(false);
  });

  it('posts one note for a longer outage and continues by itself when the database is back', async () => {
    const answerGate = gate();
    const h = await bed.harness({ settings: { contextWindow: 100_000, storageOutageNoteMs: 1_000 } });
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        if (index === 0) await answerGate.promise;
        return at(300, { content: 'Here after the outage.' });
      },
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'question'), { startSession: true });
    await until(() => requestsOf(bed.model.requests, 'worker').length === 1, 10_000, 'model call');
    const away = await takeDatabaseAway(bed.database.name);
    answerGate.open();
    // Away long enough for several failed attempts after the note (back-off 0.5, 1, 2, 4 s).
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await away.restore();
    await h.waitForEvent('answer', (event) => event.session.id === session!.id, 20_000);
    const notes = h.events.filter((event) => event.type === 'error' && event.session.id === session!.id);
    expect(notes.map((event) => (event as { error: { code: string } }).error.code)).toEqual(['storage']);
    expect(answersOf(h, session!.id)).toHaveLength(1);
  });
});

describe('the service through a failover', () => {
  it('recovers sessions with backlog when the database was away as it started: it waits, then drives them (R12, R18)', async () => {
    const stores = createPrismaStores(bed.database.prisma);
    const thread = newThread();
    const { session } = await arrive(stores, thread, { key: `console:${thread.threadKey}:1`, authorId: 'u', text: 'question' });
    // Recovery drives every session with backlog in the database (earlier tests' too, in an order
    // of their ids): the reply is this session's, not the first caller's.
    bed.model.respond((body) => (body['prompt_cache_key'] === session.id ? { content: 'Recovered after the failover.' } : undefined));
    const h = await bed.harness({});
    const away = await takeDatabaseAway(bed.database.name);
    const recovered = h.agent.recover();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await away.restore();
    expect(await recovered).toBeGreaterThanOrEqual(1);
    await h.waitForEvent('answer', (event) => event.session.id === session.id && event.text === 'Recovered after the failover.', 20_000);
  });

  it('stays up, reports not ready while the database is away, and answers by itself afterwards', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-failover-'));
    const stores = createPrismaStores(bed.database.prisma);
    const thread = newThread();
    const { session } = await arrive(stores, thread, { key: `console:${thread.threadKey}:1`, authorId: 'u', text: 'question' });
    bed.model.respond(() => ({ content: 'Answered after the failover.', delayMs: 2_500, usage: { promptTokens: 300, cachedTokens: 0, completionTokens: 5 } }));
    const service = startScript('src/main.ts', {
      DATABASE_URL: bed.database.url, DATA_DIR: dataDir, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: bed.model.url,
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory',
    });
    bed.onCleanup(async () => {
      service.kill('SIGKILL');
      await service.exited;
    });
    const started = await service.waitForLog(/service-started/);
    const readyz = async () => (await fetch(`http://127.0.0.1:${String(started['port'])}/readyz`)).status;
    await bed.model.waitForRequests(1, { timeoutMs: 20_000 });
    // What a failover does: new connections refused and the open ones dropped, for 1.5 s.
    const away = await takeDatabaseAway(bed.database.name);
    expect(await readyz()).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await away.restore();
    const answered = async () =>
      (await bed.database.prisma.contextMessage.count({ where: { segment: { sessionId: session.id }, role: 'assistant' } })) > 0;
    await until(answered, 30_000, 'the answer stored');
    expect(await readyz()).toBe(200);
    expect(service.child.exitCode).toBeNull();
    // Asked once: the answer that arrived during the outage was stored, not asked for again.
    expect(bed.model.requests.filter((request) => request.body.prompt_cache_key === session.id)).toHaveLength(1);
  }, 60_000);
});
