// Memory you can trust across restarts, hand-overs and resets (spec R3, R8, R11, R14, R17) on real
// Postgres with the real OpenAI client against the fake model.
import { describe, expect, it } from 'vitest';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import type { AgentEvent } from '../../src/core/events.js';
import { newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { at, gate, requestsOf, scriptRoles } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();

/** A chat adapter's part in delivery: every answer it takes is recorded, then marked delivered. */
function deliveringAdapter(h: AgentHarness, delivered: Array<{ key: string; text: string; sessionId: string }>): void {
  h.deps.events.subscribe((event: AgentEvent) => {
    if (event.type !== 'answer') return;
    delivered.push({ key: `${event.segmentId}:${event.seq}`, text: event.text, sessionId: event.session.id });
    void h.agent.delivered(event);
  });
}

/**
 * A session whose first answer ("one") forks a decider that is held open, then a person's reset:
 * the second worker answer and the decider's eventual words are the test's.
 */
async function resetWhileFirstDeciderThinks(options: { second: ReturnType<typeof at>; decision: string }) {
  const heldDecider = gate();
  const h = await bed.harness({ settings: { contextWindow: 10_000 } });
  scriptRoles(bed.model, {
    worker: [at(400, { content: 'one' }), options.second],
    decider: async (_body, index) => {
      if (index === 0) await heldDecider.promise;
      return { content: options.decision };
    },
  });
  const thread = newThread();
  const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
  const runner = await h.agent.runner(session!.id);
  await h.waitForEvent('answer', (event) => event.text === 'one');
  await h.agent.reset(session!.id);
  await h.waitForEvent('context-reset', (event) => event.session.id === session!.id);
  return { h, session: session!, runner, thread, heldDecider };
}

describe('delivery exactly once (R17)', () => {
  it('delivers each answer once across a reset that carries it, a restart and a lease hand-over', async () => {
    const delivered: Array<{ key: string; text: string; sessionId: string }> = [];
    const secondGate = gate();
    const first = await bed.harness({ settings: { contextWindow: 100_000 } });
    deliveringAdapter(first, delivered);
    // Answers by the latest message of this thread: the restart below recovers every session of
    // the file's database, and an earlier test's session may call the model too.
    const answers: Record<string, string> = { one: 'first answer', two: 'second answer', three: 'third answer' };
    let secondAsked = false;
    scriptRoles(bed.model, {
      worker: async (body) => {
        const said = body.messages.map((message) => (typeof message['content'] === 'string' ? message['content'] : '')).map((text) => /^> (one|two|three)$/m.exec(text)?.[1]).filter(Boolean).at(-1);
        if (said === 'two') {
          secondAsked = true;
          await secondGate.promise;
        }
        return at(200, { content: (said && answers[said]) ?? 'more' });
      },
    });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'one'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.text === 'first answer');
    await first.agent.submit(personMessage(thread, 'two'), { startSession: false });
    await until(() => secondAsked, 10_000, 'second call');
    // A reset is asked for during the second run: it carries both answers into the new segment.
    expect(await first.agent.reset(session!.id)).toBe(true);
    secondGate.open();
    const reset = await first.waitForEvent('context-reset', (event) => event.session.id === session!.id);
    expect(reset.carriedMessages).toBeGreaterThanOrEqual(4);
    const runner = await first.agent.runner(session!.id);
    await runner.whenIdle();
    await until(async () => (await first.stores.deliveries.pending(session!.id)).answers.length === 0, 5_000, 'delivered marks');

    // A restart: a new process recovers and loads the session.
    await first.close();
    const restarted = await bed.harness({ settings: { contextWindow: 100_000 } });
    deliveringAdapter(restarted, delivered);
    await restarted.agent.recover();
    await restarted.agent.runner(session!.id);
    await restarted.close();

    // A hand-over: a replica with its own lease owner takes the session for the next message.
    const replica = await bed.harness({ settings: { contextWindow: 100_000 }, replica: { leases: createLeaseStore(bed.database.prisma) } });
    deliveringAdapter(replica, delivered);
    await replica.agent.submit(personMessage(thread, 'three'), { startSession: false });
    await replica.waitForEvent('answer', (event) => event.text === 'third answer');
    await (await replica.agent.runner(session!.id)).whenIdle();

    const ours = delivered.filter((entry) => entry.sessionId === session!.id);
    expect(ours.map((entry) => entry.text)).toEqual(['first answer', 'second answer', 'third answer']);
    expect(new Set(ours.map((entry) => entry.key)).size).toBe(3);
    // The carried copies in the new segment were never owed; the originals are delivered.
    const owed = () => bed.database.prisma.contextMessage.count({ where: { segment: { sessionId: session!.id }, awaitingDelivery: true } });
    await until(async () => (await owed()) === 0, 5_000, 'nothing owed');
  });
});

describe('memory runs (R3, R8, R14)', () => {
  it('forks no second decider while one runs, and records each call with its role and memory run (R3, R14)', async () => {
    const deciderGate = gate();
    const h = await bed.harness({ settings: { contextWindow: 10_000 } });
    scriptRoles(bed.model, {
      worker: [at(400, { toolCalls: [{ id: 'c1', name: 'memory_list', arguments: {} }] }), at(700, { content: 'done' })],
      decider: async () => {
        await deciderGate.promise;
        return { content: 'Keep it.\nKEEP_CONTEXT' };
      },
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'go'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    // Two steps were crossed (3% and 6%) while the first decider ran: one decider only.
    expect(runner.context.segment.lastStep).toBe(6);
    expect(requestsOf(bed.model.requests, 'decider')).toHaveLength(1);
    deciderGate.open();
    await runner.memory.settle();
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session!.id } });
    const calls = await bed.database.prisma.modelCall.findMany({ where: { sessionId: session!.id }, orderBy: { id: 'asc' } });
    expect(runs.filter((run) => run.role === 'decider')).toHaveLength(1);
    for (const call of calls) {
      if (call.role === 'worker') {
        expect(call.memoryRunId).toBeNull();
        continue;
      }
      const run = runs.find((candidate) => candidate.id === call.memoryRunId);
      expect(run?.role).toBe(call.role);
    }
    expect(new Set(calls.map((call) => call.role))).toEqual(new Set(['worker', 'summarizer', 'decider']));
  });

  it("ignores a decider whose segment ended before it answered, even when it lands later (R8)", async () => {
    const { h, session, runner, heldDecider: deciderGate } = await resetWhileFirstDeciderThinks({ second: at(300, { content: 'two' }), decision: 'All finished.\nRESET_CONTEXT' });
    deciderGate.open();
    await h.waitForEvent('memory-run-end', (event) => event.role === 'decider' && event.decision === 'reset');
    await runner.memory.settle();
    await runner.whenIdle();
    expect(runner.session.resetRequested).toBe(false);
    expect((await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).resetRequested).toBe(false);
    expect(await bed.database.prisma.segment.count({ where: { sessionId: session.id } })).toBe(2);
  });

  it('forks a decider in the new segment although the old segment’s decider still runs', async () => {
    const { h, runner, thread, heldDecider: oldDecider } = await resetWhileFirstDeciderThinks({ second: at(6_000, { content: 'two' }), decision: 'Keep.\nKEEP_CONTEXT' });
    await h.agent.submit(personMessage(thread, 'more'), { startSession: false });
    await h.waitForEvent('answer', (event) => event.text === 'two');
    await until(() => requestsOf(bed.model.requests, 'decider').length === 2, 5_000, 'the new segment’s decider');
    oldDecider.open();
    await runner.memory.settle();
  });
});

/** A session that answered 'one', forked a summarizer that waits for its gate, and was paused. */
async function pausedWithSummarizerRunning() {
  const summarizerGate = gate();
  const h = await bed.harness({ settings: { contextWindow: 10_000 } });
  scriptRoles(bed.model, {
    worker: [at(400, { content: 'one' }), at(300, { content: 'answered the reply' })],
    summarizer: async () => {
      await summarizerGate.promise;
      return { content: 'no change' };
    },
  });
  const thread = newThread();
  const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
  const runner = await h.agent.runner(session!.id);
  await h.waitForEvent('answer', (event) => event.text === 'one');
  await h.agent.pause(session!.id);
  await until(() => runner.session.paused, 5_000, 'paused');
  return { h, thread, session: session!, runner, summarizerGate };
}

describe('pause and reset (R11, R9)', () => {
  it('takes a reply to a paused session with a reset pending after the reset, without another message', async () => {
    const { h, thread, session, summarizerGate } = await pausedWithSummarizerRunning();
    // The reset waits for the running summarizer; meanwhile someone replies.
    await h.agent.reset(session.id);
    await h.agent.submit(personMessage(thread, 'a reply', 'Grace'), { startSession: false });
    summarizerGate.open();
    const reset = await h.waitForEvent('context-reset', (event) => event.session.id === session.id);
    const answer = await h.waitForEvent('answer', (event) => event.text === 'answered the reply');
    expect(answer.segmentId).toBe(reset.segmentId);
  });

  it('keeps a resume that lands while the reset\'s claim reads the session row: the older row does not pause it again', async () => {
    const { h, thread, session, runner, summarizerGate } = await pausedWithSummarizerRunning();
    // The row the reset's claim reads (paused) is held until the reply's resume has been written.
    const rowRead = gate();
    const released = gate();
    const sessions = h.deps.stores.sessions;
    const get = sessions.get.bind(sessions);
    let holding = true;
    sessions.get = async (id) => {
      const row = await get(id);
      if (holding && id === session.id && new Error().stack?.includes('SessionMirror.refresh')) {
        holding = false;
        rowRead.open();
        await released.promise;
      }
      return row;
    };
    await h.agent.reset(session.id);
    await rowRead.promise;
    await h.agent.submit(personMessage(thread, 'a reply', 'Grace'), { startSession: false });
    await until(() => !runner.session.paused, 5_000, 'resumed by the reply');
    released.open();
    summarizerGate.open();
    const reset = await h.waitForEvent('context-reset', (event) => event.session.id === session.id);
    const answer = await h.waitForEvent('answer', (event) => event.text === 'answered the reply');
    expect(answer.segmentId).toBe(reset.segmentId);
    expect(runner.session.paused).toBe(false);
  });
});
