// Memory across replicas (issue #28): two agents over one Postgres database, each with its own
// connection pool, lease owner and LISTEN connection. The session's row is the truth for flags and
// segments; a replica's mirror of it may be stale at any moment.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSettings } from '../../src/core/agent-context.js';
import { openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { PostgresWakeups } from '../../src/adapters/storage/wakeups.js';
import type { AnyTool } from '../../src/core/tool.js';
import { createLogger } from '../../src/log.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { at, gate, requestsOf, scriptRoles, slowTool } from '../support/model-script.js';
import { until } from '../support/wait.js';

const log = createLogger('silent');
let database: TestDatabase;
let model: FakeModelServer;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeModelServer();
});
afterAll(async () => {
  await model.close();
  await database.drop();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  model.reset();
});

interface ReplicaOptions {
  tools?: AnyTool[];
  leaseTtlMs?: number;
  leaseIdleGraceMs?: number;
  settings?: Partial<AgentSettings>;
}

/** A replica in this process: its own connection pool, lease owner and LISTEN connection. */
async function replica(name: string, options: ReplicaOptions = {}): Promise<AgentHarness> {
  const connection: Database = await openDatabase({ databaseUrl: database.url, dataDir: '/nonexistent', log });
  const wakeups = await PostgresWakeups.start(connection.pool!, database.url, log);
  const harness = await createAgentHarness({
    database: connection,
    model,
    tools: options.tools ?? [],
    settings: options.settings ?? {},
    replica: { owner: name, wakeups, leases: createLeaseStore(connection.prisma, connection.pool), leaseTtlMs: options.leaseTtlMs ?? 10_000, sweepIntervalMs: 300, leaseIdleGraceMs: options.leaseIdleGraceMs ?? 0 },
  });
  harness.agent.runners.startSweeping();
  closers.push(async () => {
    await harness.close();
    await wakeups.close();
    await connection.close();
  });
  return harness;
}

const sessionRow = (id: string) => database.prisma.session.findUniqueOrThrow({ where: { id } });
const segmentCount = (sessionId: string) => database.prisma.segment.count({ where: { sessionId } });

/** A stalled replica's lease ttl (ms): short, so its belief that it still holds the lease soon ends. */
const stallTtlMs = 600;

/**
 * The replica stalls: it can no longer reach the lease table (its heartbeat fails, its claims are
 * refused), its lease runs out, and once its own idea of holding it has lapsed, another replica
 * may take the session.
 */
async function stall(harness: AgentHarness, sessionId: string): Promise<void> {
  const leases = harness.deps.replica.leases;
  leases.renewAll = async () => {
    throw new Error('stalled');
  };
  leases.acquire = async () => null;
  await database.prisma.$executeRaw`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = ${sessionId}`;
  await new Promise((resolve) => setTimeout(resolve, stallTtlMs + 100));
}

// Two replicas, each with its own pool and LISTEN connection, on a loaded machine: more time than the default.
describe('flags across replicas (R8, R11)', { timeout: 90_000 }, () => {
  it('does not repeat a pause that the driver already carried out and a person resumed', async () => {
    const slow = slowTool();
    const driver = await replica('flags-a', { tools: [slow.tool] });
    scriptRoles(model, { worker: [{ toolCalls: [{ id: 't1', name: 'slow_step', arguments: {} }] }, { content: 'after the pause' }] });
    const thread = newThread();
    const { session } = await driver.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await until(slow.started, 30_000, 'tool start');
    // The other replica starts once the driver holds the lease: both hear the message's wake-up,
    // and whichever claims first drives.
    const other = await replica('flags-b', { tools: [slow.tool] });
    // The pause reaches the replica that does not drive: it stores the request, and its runner
    // remembers it after its claim is refused.
    await other.agent.pause(session!.id);
    slow.open();
    await driver.waitForEvent('paused', (event) => event.session.id === session!.id, 30_000);
    await driver.agent.resume(session!.id);
    await driver.waitForEvent('answer', (event) => event.text === 'after the pause', 30_000);
    await (await driver.agent.runner(session!.id)).whenIdle();
    // Something pumps the stale runner (a budget raise): it takes the released lease, and the row
    // no longer asks for a pause.
    await other.agent.raiseBudget(session!.id, 1);
    const stale = await other.agent.runner(session!.id);
    await stale.whenIdle();
    expect(await sessionRow(session!.id)).toMatchObject({ paused: false, pauseRequested: false });
    expect(other.events.filter((event) => event.type === 'paused')).toHaveLength(0);
  });

  it('does not repeat a reset that the driver already carried out', async () => {
    const slow = slowTool();
    const driver = await replica('flags-c', { tools: [slow.tool] });
    scriptRoles(model, { worker: [{ toolCalls: [{ id: 't1', name: 'slow_step', arguments: {} }] }, { content: 'after the reset' }] });
    const thread = newThread();
    const { session } = await driver.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await until(slow.started, 30_000, 'tool start');
    // The other replica starts once the driver holds the lease: both hear the message's wake-up,
    // and whichever claims first drives.
    const other = await replica('flags-d', { tools: [slow.tool] });
    expect(await other.agent.reset(session!.id)).toBe(true);
    slow.open();
    const reset = await driver.waitForEvent('context-reset', (event) => event.session.id === session!.id, 30_000);
    await driver.waitForEvent('answer', (event) => event.text === 'after the reset', 30_000);
    await (await driver.agent.runner(session!.id)).whenIdle();
    await other.agent.raiseBudget(session!.id, 1);
    await (await other.agent.runner(session!.id)).whenIdle();
    expect(await segmentCount(session!.id)).toBe(2);
    // The other replica may re-send the reset's note (still owed: no chat adapter took it), never a new one.
    expect(other.events.flatMap((event) => (event.type === 'context-reset' ? [event.segmentId] : [])).every((id) => id === reset.segmentId)).toBe(true);
    expect((await sessionRow(session!.id)).resetRequested).toBe(false);
  });

  it('ignores a decider of a segment that another replica already reset (R8)', async () => {
    const deciderGate = gate();
    const settings = { contextWindow: 10_000 };
    const first = await replica('stale-decider-a', { settings, leaseTtlMs: stallTtlMs });
    const second = await replica('stale-decider-b', { settings });
    scriptRoles(model, {
      worker: [at(400, { content: 'first answer' })],
      decider: async (_body, index) => {
        if (index === 0) await deciderGate.promise;
        return { content: 'Nothing here matters any more.\nRESET_CONTEXT' };
      },
    });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.text === 'first answer', 30_000);
    const firstRunner = await first.agent.runner(session!.id);
    await firstRunner.whenIdle();
    // The first replica stalls: its lease runs out while its segment-1 decider is still thinking,
    // and the second replica takes the session and resets it on a person's word.
    await stall(first, session!.id);
    expect(await second.agent.reset(session!.id)).toBe(true);
    await second.waitForEvent('context-reset', (event) => event.session.id === session!.id, 30_000);
    await (await second.agent.runner(session!.id)).whenIdle();
    expect(await segmentCount(session!.id)).toBe(2);
    // The old decider now says reset: its segment ended, so nothing is stored or done.
    deciderGate.open();
    await firstRunner.memory.settle();
    await firstRunner.whenIdle();
    expect((await sessionRow(session!.id)).resetRequested).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await segmentCount(session!.id)).toBe(2);
  });
});

describe('lease hand-over during a memory run (R3, R18)', { timeout: 90_000 }, () => {
  it('keeps the lease while its summarizer runs: the other replica forks no second summarizer, and the run ends succeeded', async () => {
    const summarizerGate = gate();
    const settings = { contextWindow: 10_000 };
    const first = await replica('live-run-a', { settings });
    const second = await replica('live-run-b', { settings });
    scriptRoles(model, {
      worker: [at(400, { content: 'first answer' }), at(700, { content: 'second answer' })],
      summarizer: async (_body, index) => {
        if (index === 0) await summarizerGate.promise;
        return { content: 'no change' };
      },
    });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.text === 'first answer', 30_000);
    const firstRunner = await first.agent.runner(session!.id);
    await firstRunner.whenIdle();
    expect(firstRunner.memory.summarizerRunning).toBe(true);
    // The worker is idle (past its grace of 0 ms), its summarizer is not: a message reaches the other replica.
    await second.agent.submit(personMessage(thread, 'one more thing', 'Grace'), { startSession: false });
    await until(() => [...first.events, ...second.events].some((event) => event.type === 'answer' && event.text === 'second answer'), 30_000, 'the second answer');
    summarizerGate.open();
    await firstRunner.memory.settle();
    await (await second.agent.runner(session!.id)).memory.settle();
    const runs = await database.prisma.memoryRun.findMany({ where: { sessionId: session!.id, role: 'summarizer' } });
    expect(runs.map((run) => run.status)).toEqual(['succeeded']);
    expect(second.events.filter((event) => event.type === 'run-start')).toHaveLength(0);
    // With its memory runs over, the lease is given up.
    await until(async () => (await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session!.id } })).released, 30_000, 'lease released');
  });

  it('records the late success of a run that a new holder took for dead', async () => {
    const summarizerGate = gate();
    const settings = { contextWindow: 10_000 };
    const first = await replica('late-run-a', { settings, leaseTtlMs: stallTtlMs });
    const second = await replica('late-run-b', { settings });
    scriptRoles(model, {
      worker: [at(400, { content: 'first answer' }), at(450, { content: 'second answer' })],
      summarizer: async (_body, index) => {
        if (index === 0) await summarizerGate.promise;
        return { content: 'no change' };
      },
    });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.text === 'first answer', 30_000);
    const firstRunner = await first.agent.runner(session!.id);
    await firstRunner.whenIdle();
    await stall(first, session!.id);
    await second.agent.submit(personMessage(thread, 'still there?', 'Grace'), { startSession: false });
    await second.waitForEvent('answer', (event) => event.text === 'second answer', 30_000);
    const run = () => database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session!.id, role: 'summarizer' }, orderBy: { startedAt: 'asc' } });
    expect(await run()).toMatchObject({ status: 'failed' });
    summarizerGate.open();
    await firstRunner.memory.settle();
    expect(await run()).toMatchObject({ status: 'succeeded', error: null });
  });
});


describe('a person\'s remember said to a replica that does not drive the session', { timeout: 90_000 }, () => {
  const request = { userId: 'U1', name: 'Ada', text: 'the deploy window is Tuesday 10:00' };
  const isRequested = (body: Parameters<typeof instructionOf>[0]) => instructionOf(body).includes('<person-request kind="remember">');
  const instructionOf = (body: { messages: Array<Record<string, unknown>> }): string => String(body.messages.findLast((message) => String(message['content']).startsWith('<role-change role="summarizer"'))?.['content'] ?? '');
  const notes = (harnesses: AgentHarness[], sessionId: string) =>
    harnesses.flatMap((harness) => harness.events.filter((event) => event.type === 'memory-updated' && event.session.id === sessionId && event.request?.name === 'Ada'));

  it('is carried out by the driver, with its note, once', async () => {
    const slow = slowTool();
    const driver = await replica('request-driver', { tools: [slow.tool], settings: { contextWindow: 100_000 } });
    scriptRoles(model, {
      // A first tool batch and its checkpoint (where the driver read what waited), then a slow one.
      worker: [{ toolCalls: [{ id: 'l0', name: 'memory_list', arguments: {} }] }, { toolCalls: [{ id: 't1', name: 'slow_step', arguments: {} }] }, { content: 'done' }],
      summarizer: (body) => ({ content: isRequested(body) ? 'Added the deploy window, as Ada asked.' : 'no change' }),
    });
    const { session } = await driver.agent.submit(personMessage(newThread(), 'start'), { startSession: true });
    await until(slow.started, 30_000, 'tool start');
    // The other replica hears the request while the driver holds the lease in a tool call.
    const other = await replica('request-other', { tools: [slow.tool], settings: { contextWindow: 100_000 } });
    await other.agent.review.remember(session!, request, request.text);
    slow.open();
    const note = await driver.waitForEvent('memory-updated', (event) => event.request?.name === 'Ada', 30_000);
    expect(note.note).toBe('Added the deploy window, as Ada asked.');
    // Told at once, the driver forked it at its next checkpoint: right after the tool's result.
    const requested = requestsOf(model.requests, 'summarizer').find((call) => isRequested(call.body))!;
    expect(requested.body.messages.at(-2)).toMatchObject({ role: 'tool', tool_call_id: 't1' });
    await driver.waitForEvent('answer', (event) => event.text === 'done', 30_000);
    for (const harness of [driver, other]) {
      const runner = await harness.agent.runner(session!.id);
      await runner.whenIdle();
      await runner.memory.settle();
    }
    await new Promise((resolve) => setTimeout(resolve, 900)); // three sweeps: nothing more comes
    expect(notes([driver, other], session!.id)).toHaveLength(1);
    expect(requestsOf(model.requests, 'summarizer').filter((call) => isRequested(call.body) && call.body.messages.at(-1)?.['role'] === 'user')).toHaveLength(1);
    expect(await database.prisma.memoryReviewEvent.count({ where: { sessionId: session!.id, requestPending: true } })).toBe(0);
  });

  it('is carried out after the driver restarts, when its run was cut short by the stop', async () => {
    const summarizerGate = gate();
    const settings = { contextWindow: 100_000 };
    const driver = await replica('request-restart-a', { settings, leaseIdleGraceMs: 60_000 });
    let requestedRuns = 0;
    scriptRoles(model, {
      worker: [{ content: 'first answer' }],
      summarizer: async (body) => {
        if (!isRequested(body)) return { content: 'no change' };
        requestedRuns += 1;
        // The first requested run is still thinking when its process stops.
        if (requestedRuns === 1) await summarizerGate.promise;
        return { content: 'Added the deploy window, as Ada asked.' };
      },
    });
    const { session } = await driver.agent.submit(personMessage(newThread(), 'start'), { startSession: true });
    await driver.waitForEvent('answer', (event) => event.text === 'first answer', 30_000);
    // The driver keeps the idle session's lease (its grace): the other replica only stores the request.
    const other = await replica('request-restart-b', { settings });
    await other.agent.review.remember(session!, request, request.text);
    await until(() => requestedRuns === 1, 30_000, 'the requested run on the driver');
    await driver.close(); // stopped: its runs are cut short, its lease given up
    summarizerGate.open();
    const restarted = await replica('request-restart-a2', { settings });
    await restarted.agent.recover();
    await until(() => notes([driver, other, restarted], session!.id).length === 1, 30_000, 'the note after the restart');
    const runner = await restarted.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();
    await new Promise((resolve) => setTimeout(resolve, 900)); // three sweeps: nothing more comes
    expect(notes([driver, other, restarted], session!.id)).toHaveLength(1);
    expect(requestedRuns).toBe(2);
  });
});

describe('a failed session and a person on another replica', { timeout: 90_000 }, () => {
  it('is driven again by a message and by a resume said to a replica that does not hold the lease', async () => {
    let resumed = false;
    // The driver keeps the lease of its failed, idle session (its grace): the other replica is refused.
    const driver = await replica('failed-driver', { leaseIdleGraceMs: 60_000 });
    scriptRoles(model, {
      worker: (body) => {
        const said = JSON.stringify(body.messages.at(-1));
        if (said.includes('try again')) return { content: 'Answered on the message.' };
        if (said.includes('break') && resumed) return { content: 'Answered on the resume.' };
        return { status: 400 };
      },
    });
    const thread = newThread();
    const { session } = await driver.agent.submit(personMessage(thread, 'first'), { startSession: true });
    await driver.waitForEvent('error', (event) => event.session.id === session!.id, 30_000);
    const other = await replica('failed-other');
    await other.agent.submit(personMessage(thread, 'try again', 'Grace'), { startSession: false });
    await driver.waitForEvent('answer', (event) => event.text === 'Answered on the message.', 30_000);
    await (await driver.agent.runner(session!.id)).whenIdle();
    await driver.agent.submit(personMessage(thread, 'break'), { startSession: false });
    await until(() => driver.events.filter((event) => event.type === 'error').length === 2, 30_000, 'the second failure');
    await (await driver.agent.runner(session!.id)).whenIdle();
    resumed = true;
    await other.agent.resume(session!.id);
    await driver.waitForEvent('answer', (event) => event.text === 'Answered on the resume.', 30_000);
    expect(other.events.filter((event) => event.type === 'run-start')).toHaveLength(0);
    expect(driver.events.filter((event) => event.type === 'error')).toHaveLength(2); // each failure said once
  });
});

describe('what a replica remembers of a reset or a run (R8, R18, R19)', { timeout: 90_000 }, () => {
  it('does not label a later reset "the context was full" after its own context-full reset failed and another replica carried it out', async () => {
    const settings = { contextWindow: 10_000 };
    const first = await replica('reason-a', { settings });
    scriptRoles(model, { worker: [at(9_000, { content: 'a full answer' }), at(100, { content: 'after the reset' })] });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    // R19: the answer reaches the hard limit; the system's own reset fails for good on this replica.
    const context = first.deps.stores.context;
    const startSegment = context.startSegment.bind(context);
    let attempts = 0;
    context.startSegment = async () => {
      attempts += 1;
      throw new Error('the disk is on fire');
    };
    await first.waitForEvent('error', (event) => event.session.id === session!.id, 30_000);
    const firstRunner = await first.agent.runner(session!.id);
    await firstRunner.whenIdle();
    expect((await sessionRow(session!.id)).resetRequested).toBe(true);
    // The failed reset waits for a person: the sweeps (every 300 ms) see its pending reset and
    // wake the runner, which does not try it again.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(attempts).toBe(1);
    context.startSegment = startSegment;
    // Another replica hears the next message and carries the pending reset out.
    const second = await replica('reason-b', { settings });
    await second.agent.submit(personMessage(thread, 'go on', 'Grace'), { startSession: false });
    await second.waitForEvent('answer', (event) => event.text === 'after the reset', 30_000);
    await (await second.agent.runner(session!.id)).whenIdle();
    expect(await segmentCount(session!.id)).toBe(2);
    // Later the other replica asks for a reset of the new segment (its decider said so), and the
    // first replica carries it out: not the system's, so no "context was full".
    expect(await second.stores.sessions.requestReset(session!.id, null)).toBe(true);
    await first.agent.raiseBudget(session!.id, 1); // pumps the first replica's runner
    const reset = await first.waitForEvent('context-reset', (event) => event.session.id === session!.id && event.segmentOrdinal === 3, 30_000);
    expect(reset.reason).toBeUndefined();
    const segment = await database.prisma.segment.findFirstOrThrow({ where: { sessionId: session!.id, ordinal: 3 } });
    expect(segment.resetReason).toBeNull();
  });

  it('never marks a decider of an earlier segment failed while it still runs', async () => {
    const deciderGate = gate();
    const settings = { contextWindow: 10_000 };
    const first = await replica('live-decider-a', { settings });
    scriptRoles(model, {
      worker: [at(400, { content: 'first answer' }), at(4_000, { content: 'third answer' }), at(4_050, { content: 'fourth answer' })],
      decider: async (_body, index) => {
        if (index === 0) await deciderGate.promise; // the segment-1 decider thinks past the reset
        return { content: 'Still relevant.\nKEEP_CONTEXT' };
      },
    });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.text === 'first answer', 30_000);
    const runner = await first.agent.runner(session!.id);
    await runner.whenIdle();
    const oldDecider = await database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session!.id, role: 'decider' } });
    expect(await first.agent.reset(session!.id)).toBe(true);
    await first.waitForEvent('context-reset', (event) => event.session.id === session!.id, 30_000);
    await runner.whenIdle();
    // Segment 2 crosses a step: its own decider runs (and ends) beside the old one.
    await first.agent.submit(personMessage(thread, 'more'), { startSession: false });
    await first.waitForEvent('memory-run-end', (event) => event.role === 'decider' && event.memoryRunId !== oldDecider.id, 30_000);
    await runner.whenIdle();
    expect(runner.memory.runningIds).toContain(oldDecider.id);
    // Another replica hears the next message while the old decider still runs on the first.
    const second = await replica('live-decider-b', { settings });
    await second.agent.submit(personMessage(thread, 'and more', 'Grace'), { startSession: false });
    await until(() => [...first.events, ...second.events].some((event) => event.type === 'answer' && event.text === 'fourth answer'), 30_000, 'the fourth answer');
    await (await second.agent.runner(session!.id)).whenIdle();
    expect(await database.prisma.memoryRun.findUniqueOrThrow({ where: { id: oldDecider.id } })).toMatchObject({ status: 'running' });
    deciderGate.open();
    await runner.memory.settle();
    expect(await database.prisma.memoryRun.findUniqueOrThrow({ where: { id: oldDecider.id } })).toMatchObject({ status: 'succeeded', error: null });
  });
});
