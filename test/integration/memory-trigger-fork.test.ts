// docs/memory-rules.md R1–R5 on real Postgres and the fake model server.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';
import { at, gate, requestsOf, scriptRoles } from '../support/model-script.js';

const echo = defineTool({ name: 'echo', description: 'Echoes text.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo: ${text}` }) as AnyTool;

const bed = useTestBed();

// Window 10,000 tokens: one 3% step is 300 tokens.
async function start(options: { tools?: AnyTool[] } = {}): Promise<AgentHarness> {
  return bed.harness({ tools: options.tools ?? [echo], settings: { contextWindow: 10_000 } });
}

async function runToIdle(h: AgentHarness, text: string, thread = newThread()) {
  const { session } = await h.agent.submit(personMessage(thread, text), { startSession: true });
  const runner = await h.agent.runner(session!.id);
  await runner.whenIdle();
  await runner.memory.settle();
  return { session: session!, runner, thread };
}

describe('trigger policy (R2)', () => {
  it('does not fork below the first step', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(200)] }); // 2%
    const { runner } = await runToIdle(h, 'hi');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(0);
    expect(requestsOf(bed.model.requests, 'decider')).toHaveLength(0);
    expect(runner.context.segment.lastStep).toBe(0);
    expect(runner.context.segment.summarizerRounds).toBe(0);
    // `status` says where the first checkpoint is: 3% of the window, the rest of 300 tokens away.
    const status = await h.agent.status(runner.session.id);
    expect(status.contextTokens).toBeLessThan(300);
    expect(status.memoryCheckpoint).toEqual({ percent: 3, tokensAway: 300 - status.contextTokens });
  });

  it('forks one summarizer and one decider when a tool turn and the answer share a step', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(1000, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }), at(1000, { content: 'done' })] });
    const { runner, session } = await runToIdle(h, 'work');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(1);
    expect(requestsOf(bed.model.requests, 'decider')).toHaveLength(1);
    expect(runner.context.segment).toMatchObject({ lastStep: 9, summarizerRounds: 1, deciderRounds: 1 });
    const stored = await bed.database.prisma.segment.findUniqueOrThrow({ where: { id: runner.context.segment.id } });
    expect(stored).toMatchObject({ lastStep: 9, summarizerRounds: 1, deciderRounds: 1 });
    // The next checkpoint is the step after the one that fired: 12%, from the context as it is now.
    const status = await h.agent.status(session.id);
    expect(status.memoryCheckpoint).toEqual({ percent: 12, tokensAway: 1_200 - status.contextTokens });
    const summarizerInstruction = String(requestsOf(bed.model.requests, 'summarizer')[0]!.body.messages.at(-1)?.['content']);
    // R4: no summarizer of this context succeeded yet, so everything after the init messages is new.
    expect(summarizerInstruction).toContain('Everything after the <memory-documents> message at the top of this context is new to memory');
    expect(summarizerInstruction).toContain('MAIN.md is still version 1');
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session.id }, orderBy: { role: 'desc' } });
    expect(runs.map((run) => [run.role, run.round, run.status])).toEqual([['summarizer', 1, 'succeeded'], ['decider', 1, 'succeeded']]);
    // R14: every call's usage is recorded with its role, and a fork's with its run.
    const calls = await bed.database.prisma.modelCall.findMany({ where: { sessionId: session.id } });
    const byRole = (role: string) => calls.filter((call) => call.role === role);
    expect(byRole('worker')).toHaveLength(requestsOf(bed.model.requests, 'worker').length);
    for (const call of byRole('worker')) expect(call).toMatchObject({ memoryRunId: null, promptTokens: 1000, error: null });
    for (const run of runs) expect(byRole(run.role).map((call) => call.memoryRunId)).toEqual([run.id]);
  });

  it('fires once when usage jumps over several steps, storing the highest step', async () => {
    const h = await start();
    const since = new Date();
    const replies = [at(350, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }), at(1420, { content: 'done' })];
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        // The second step's trigger must find the first summarizer finished (else R3 skips it).
        if (index === 1) await until(async () => (await bed.database.prisma.memoryRun.count({ where: { role: 'summarizer', status: 'succeeded', startedAt: { gte: since } } })) > 0);
        return replies[index]!;
      },
    });
    const { runner } = await runToIdle(h, 'work');
    // 3% fires (step 3), then a jump to 14% fires once more (step 12).
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(2);
    expect(runner.context.segment.lastStep).toBe(12);
  });

  it('forks on a final answer without tool calls (pure chat triggers)', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(700, { content: 'just chatting' })] });
    await runToIdle(h, 'hello');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(1);
  });

  it('measures the context the next call will send: a big tool batch counts at the checkpoint right after it', async () => {
    const big = defineTool({ name: 'big_output', description: 'Returns a lot.', input: z.object({}), execute: async () => 'x'.repeat(4_000) }) as AnyTool;
    const h = await start({ tools: [echo, big] });
    scriptRoles(bed.model, { worker: [at(200, { toolCalls: [{ id: 'b1', name: 'big_output', arguments: {} }] }), at(1_300, { content: 'read it' })] });
    const { runner } = await runToIdle(h, 'read the big thing');
    // 200 reported + the ~1,000-token result appended: 12% at the after-tools checkpoint.
    const forks = requestsOf(bed.model.requests, 'summarizer').filter((request) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change'));
    expect(forks.length).toBeGreaterThanOrEqual(1);
    expect(forks[0]!.body.messages.at(-2)).toMatchObject({ role: 'tool', tool_call_id: 'b1' });
    expect(runner.context.segment.lastStep).toBeGreaterThanOrEqual(12);
  });

  it('estimates tokens from the serialized context when the provider reports no usage', async () => {
    const h = await start();
    bed.model.respond((body) => (requestsOf([{ body } as never], 'worker').length ? { content: 'no usage here', usage: null } : { content: 'KEEP_CONTEXT', usage: null }));
    const { runner } = await runToIdle(h, 'x'.repeat(4000));
    // The estimate (init messages + a 4,000-character message ≈ 1,000+ tokens) is over 3% of 10k.
    expect(runner.context.nextCallTokens()).toBeGreaterThan(1000);
    expect(runner.context.segment.lastStep).toBeGreaterThanOrEqual(9);
  });
});

describe('fork (R1) and marker (R3)', () => {
  it('sends forks the worker request byte for byte plus one message, without stalling the worker', async () => {
    const h = await start();
    const summarizerGate = gate();
    scriptRoles(bed.model, {
      worker: [at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }), at(450, { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'b' } }] }), at(460, { content: 'finished' })],
      summarizer: async () => {
        await summarizerGate.promise;
        return { content: 'no change' };
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
    // The worker's later requests reach the server while the summarizer's request is still pending.
    await bed.model.waitFor((request) => requestsOf([request], 'worker').length === 1 && request.body.messages.some((message) => message['tool_call_id'] === 'c2'), { timeoutMs: 10_000 });
    // The fork goes once the worker's next call is read: on a loaded machine it may reach the server
    // after the worker's later call, but it is still unanswered (held by its gate) while they run.
    const summarizerRequest = await bed.model.waitFor((request) => requestsOf([request], 'summarizer').length === 1, { timeoutMs: 10_000 });
    expect(summarizerRequest.respondedAt).toBeUndefined();
    summarizerGate.open();
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();

    const workers = requestsOf(bed.model.requests, 'worker');
    const decider = requestsOf(bed.model.requests, 'decider')[0]!;
    const nextWorker = workers[1]!; // the first worker request after the fork
    const forkPrefix = summarizerRequest.body.messages.slice(0, -1);
    // Summarizer: the worker's context at fork time, then its instruction; the marker came after.
    expect(JSON.stringify(nextWorker.body.messages.slice(0, forkPrefix.length))).toBe(JSON.stringify(forkPrefix));
    expect(nextWorker.body.messages[forkPrefix.length]?.['content']).toBe('<memory-checkpoint n="1"/>');
    // Decider: the same prefix including the marker.
    expect(JSON.stringify(decider.body.messages.slice(0, -1))).toBe(JSON.stringify(nextWorker.body.messages.slice(0, forkPrefix.length + 1)));
    for (const fork of [summarizerRequest, decider]) {
      expect(JSON.stringify(fork.body.tools)).toBe(JSON.stringify(nextWorker.body.tools));
      expect(fork.body.prompt_cache_key).toBe(session!.id);
      expect(fork.body.model).toBe(nextWorker.body.model);
      expect(fork.body.messages.at(-1)?.['role']).toBe('user');
    }
    // Cheaper deciders: a small answer cap (not part of the prompt, so the prefix is shared).
    expect([nextWorker.body['max_tokens'], summarizerRequest.body['max_tokens'], decider.body['max_tokens']]).toEqual([undefined, undefined, 1024]);
    // The marker is a flagged row, stored right after the fork point.
    const marker = await bed.database.prisma.contextMessage.findFirstOrThrow({ where: { segmentId: runner.context.segment.id, isMarker: true } });
    expect(marker.seq).toBe(forkPrefix.length);
    expect(marker.memoryRunId).not.toBeNull();
  });

  it('sends a fork\'s first request once the worker\'s next call was read, so its whole prefix is cached, without delaying the worker', async () => {
    const h = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, forkAfterWorkerPrefillMs: 5_000 } });
    scriptRoles(bed.model, {
      worker: [at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }), at(420, { content: 'done', delayMs: 300 })],
    });
    await runToIdle(h, 'go');
    const second = requestsOf(bed.model.requests, 'worker')[1]!;
    const forks = [...requestsOf(bed.model.requests, 'summarizer'), ...requestsOf(bed.model.requests, 'decider')];
    expect(forks.length).toBeGreaterThanOrEqual(2);
    // The worker's next call went out first; the forks waited for its first chunk (after 300 ms).
    for (const fork of forks) expect(fork.receivedAt).toBeGreaterThanOrEqual(second.receivedAt + 300);
  });

  it('skips the summarizer and its marker while one runs, but consumes the step', async () => {
    const h = await start();
    const summarizerGate = gate();
    let sessionId = '';
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        // The first decider has finished before the second step is crossed.
        if (index === 1) await until(async () => (await bed.database.prisma.memoryRun.count({ where: { sessionId, role: 'decider', status: 'succeeded' } })) === 1);
        return [
          at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }),
          at(700, { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'b' } }] }),
          at(710, { content: 'done' }),
        ][index] ?? at(710);
      },
      summarizer: async () => {
        await summarizerGate.promise;
        return { content: 'no change' };
      },
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'go'), { startSession: true });
    sessionId = session!.id;
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    // Second crossing (step 6) happened while the summarizer was still pending.
    expect(runner.context.segment.lastStep).toBe(6);
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(1);
    expect(runner.context.entries.filter((entry) => entry.isMarker)).toHaveLength(1);
    // The decider had finished, so a second decider was forked (behavior 10), seeing the one marker.
    expect(requestsOf(bed.model.requests, 'decider')).toHaveLength(2);
    summarizerGate.open();
    await runner.memory.settle();
  });

  // Steps 3, 6, 9 … 21. Floor 10: 12 forks, 15 does not, 18 forks, 21 does not. Floor 9 (a step
  // itself, so it counts): 9 forks, 15 and 21 too.
  it.each([
    { floor: 10, deciders: 2 },
    { floor: 9, deciders: 3 },
  ])('forks no decider below its floor ($floor%) and then one every N triggered steps; the summarizer keeps every step', async ({ floor, deciders }) => {
    const h = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, deciderFloorPercent: floor, deciderEvery: 2 } });
    const deciderRuns = async () => bed.database.prisma.memoryRun.findMany({ where: { role: 'decider' }, orderBy: { startedAt: 'asc' } });
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        // Every memory run of the previous step has ended, so none is skipped for running.
        await until(async () => (await bed.database.prisma.memoryRun.count({ where: { status: 'running' } })) === 0);
        await new Promise((resolve) => setTimeout(resolve, 20)); // its promise settles right after the row
        const tokens = [350, 650, 950, 1_250, 1_550, 1_850, 2_150][index] ?? 2_150;
        return index < 6 ? at(tokens, { toolCalls: [{ id: `c${index}`, name: 'echo', arguments: { text: 'x' } }] }) : at(tokens, { content: 'done' });
      },
    });
    const { runner, session } = await runToIdle(h, 'go');
    const steps = (await deciderRuns()).filter((run) => run.sessionId === session.id).map((run) => run.forkPoint);
    expect(steps).toHaveLength(deciders);
    expect(runner.context.segment.lastStep).toBe(21);
    expect(requestsOf(bed.model.requests, 'summarizer').filter((request) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change')).length).toBe(7);
  });

  it('counts the steps passed while a decider runs: with every 2, deciders at steps 3 and 9', async () => {
    const deciderGate = gate();
    const h = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, deciderEvery: 2 } });
    const deciders = async (sessionId: string) => bed.database.prisma.memoryRun.count({ where: { sessionId, role: 'decider' } });
    let sessionId = '';
    const seen: number[] = [];
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        // Each call sees the deciders forked at the checkpoints before it.
        if (index > 0) seen.push(await deciders(sessionId));
        if (index === 2) {
          deciderGate.open(); // the step-3 decider ran through step 6
          await until(async () => (await bed.database.prisma.memoryRun.count({ where: { sessionId, role: 'decider', status: 'running' } })) === 0);
          await new Promise((resolve) => setTimeout(resolve, 20)); // its promise settles right after the row
        }
        const tokens = [350, 650, 950, 1_250][index] ?? 1_250;
        return index < 4 ? at(tokens, { toolCalls: [{ id: `c${index}`, name: 'echo', arguments: { text: 'x' } }] }) : at(tokens, { content: 'done' });
      },
      decider: async (_body, index) => {
        if (index === 0) await deciderGate.promise;
        return { content: 'Mostly still relevant.\nKEEP_CONTEXT' };
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
    sessionId = session!.id;
    const runner = await h.agent.runner(sessionId);
    await runner.whenIdle();
    await runner.memory.settle();
    // Calls after steps 3, 6, 9 and 12: the decider of step 9 is there before step 12.
    expect(seen).toEqual([1, 1, 2, 2]);
  });

  it('stores the decider count: a new process goes on counting where the last one stopped', async () => {
    const first = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, deciderEvery: 2 } });
    scriptRoles(bed.model, { worker: [at(350, { content: 'at step 3' }), at(650, { content: 'at step 6' }), at(950, { content: 'at step 9' })] });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'one'), { startSession: true });
    const runner = await first.agent.runner(session!.id);
    await first.waitForEvent('answer', (event) => event.text === 'at step 3');
    await runner.whenIdle();
    await runner.memory.settle();
    await first.close();
    const deciders = () => bed.database.prisma.memoryRun.count({ where: { sessionId: session!.id, role: 'decider' } });
    expect(await deciders()).toBe(1);
    // A restarted process: step 6 is the second step since the last decider, not the first of a count.
    const second = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, deciderEvery: 2 } });
    await second.agent.submit(personMessage(thread, 'two'), { startSession: false });
    await second.waitForEvent('answer', (event) => event.text === 'at step 6');
    const again = await second.agent.runner(session!.id);
    await again.whenIdle();
    await again.memory.settle();
    expect(await deciders()).toBe(1);
    await second.agent.submit(personMessage(thread, 'three'), { startSession: false });
    await second.waitForEvent('answer', (event) => event.text === 'at step 9');
    await again.whenIdle();
    await again.memory.settle();
    expect(await deciders()).toBe(2);
  });

  it('gives later summarizers the latest marker as their starting point and the current MAIN.md', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }] }), at(700, { content: 'done' })],
      summarizer: (_body, index) =>
        index === 0 ? { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nThe team ships on Fridays.\n', expected_version: 1 } }] } : { content: 'updated' },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();
    // The worker reached step 6 while summarizer 1 ran; drive once more to cross step 9 after it.
    scriptRoles(bed.model, { worker: [at(950, { content: 'again' })] });
    await h.agent.submit(personMessage(thread, 'more'), { startSession: false });
    await (await h.agent.runner(session!.id)).whenIdle(); // after the wake-up submit started
    await runner.memory.settle();
    const summarizers = requestsOf(bed.model.requests, 'summarizer').filter((request) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change'));
    const later = String(summarizers.at(-1)!.body.messages.at(-1)?.['content']);
    // R4: the boundary is the marker of the latest SUCCEEDED run, named by its round.
    expect(later).toContain(`Everything up to the <memory-checkpoint n="${summarizers.length - 1}"/> notice has already been saved`);
    // MAIN.md changed since this context's init messages: its current text is given.
    expect(later).toContain('The team ships on Fridays.');
    expect(later).toContain(`round="${summarizers.length}"`);
    expect(summarizers.length).toBeGreaterThanOrEqual(2);
  });
});

describe('no gap after a failed summarizer (R4)', () => {
  it('tells the next summarizer to start after the marker of the latest run that SUCCEEDED', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'one' }), at(700, { content: 'two' }), at(1_000, { content: 'three' })],
      // Round 1 succeeds, round 2 fails, round 3 is the one that must cover round 2's range.
      summarizer: (_body, index) => (index === 1 ? { status: 400, errorMessage: 'bad request' } : { content: 'no change' }),
    });
    const thread = newThread();
    for (const text of ['a', 'b', 'c']) {
      const { session } = await h.agent.submit(personMessage(thread, text), { startSession: text === 'a' });
      const runner = await h.agent.runner(session!.id);
      await runner.whenIdle();
      await runner.memory.settle();
    }
    const forks = requestsOf(bed.model.requests, 'summarizer').filter((request) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change'));
    expect(forks).toHaveLength(3);
    const third = String(forks[2]!.body.messages.at(-1)?.['content']);
    expect(third).toContain('Everything up to the <memory-checkpoint n="1"/> notice has already been saved');
    // Round 2's marker is in the context the third fork sees, but it does not count.
    expect(forks[2]!.body.messages.some((message) => message['content'] === '<memory-checkpoint n="2"/>')).toBe(true);
  });

  it('tells the first summarizer of a context that MAIN.md changed when another conversation wrote it', async () => {
    const h = await start();
    const written = gate();
    scriptRoles(bed.model, {
      worker: async () => {
        await written.promise;
        return at(400, { content: 'one' });
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'a'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    // Another session of the space writes MAIN.md after this context read it (while the worker thinks).
    await until(() => requestsOf(bed.model.requests, 'worker').length === 1, 5_000, 'the worker call');
    const main = await h.stores.documents.read({ spaceId: session!.memorySpaceId, sessionKey: '', path: 'MAIN.md' });
    await h.stores.documents.write({ spaceId: session!.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, '# Memory\nWritten elsewhere.\n', { kind: 'system' }, main!.version);
    written.open();
    await runner.whenIdle();
    await runner.memory.settle();
    const first = String(requestsOf(bed.model.requests, 'summarizer')[0]!.body.messages.at(-1)?.['content']);
    expect(first).toContain('Written elsewhere.');
    expect(first).not.toContain('have not changed since the top of this context');
  });
});

describe('summarizer caps (R4)', () => {
  async function summarizerFailure(settings: { summarizerMaxSteps: number; summarizerTimeoutMs: number }, summarizer: Parameters<typeof scriptRoles>[1]['summarizer']) {
    const harness = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, ...settings } });
    scriptRoles(bed.model, { worker: [at(400, { content: 'one' })], ...(summarizer ? { summarizer } : {}) });
    const { session, runner } = await runToIdle(harness, 'go');
    const failed = await harness.waitForEvent('memory-run-failed');
    await runner.memory.settle(); // the failure is recorded behind the event
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session.id, role: 'summarizer' } });
    return { failed, run };
  }

  // The loop's caps themselves: test/unit/fork-loop.test.ts. Here, what the manager makes of a capped run.
  it('records a summarizer stopped at its step cap as a failed run and says so', async () => {
    const { failed, run } = await summarizerFailure({ summarizerMaxSteps: 3, summarizerTimeoutMs: 60_000 }, () => ({ toolCalls: [{ id: `s${Math.random()}`, name: 'memory_list', arguments: {} }] }));
    expect(failed.error).toBe('summarizer stopped at its cap of 3 steps');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(3);
    expect(run.status).toBe('failed');
  });
});

describe('memory writes and permissions (R13, R15)', () => {
  it('refuses MAIN.md to the worker and TODO.md to the summarizer; records every summarizer write with its author', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [
        at(100, { toolCalls: [{ id: 'w1', name: 'memory_write', arguments: { path: 'MAIN.md', content: 'hijack', expected_version: 1 } }, { id: 'w2', name: 'todo_write', arguments: { content: '- [ ] ship it' } }] }),
        at(400, { content: 'done' }),
      ],
      summarizer: [
        { toolCalls: [{ id: 's1', name: 'todo_write', arguments: { content: 'mine now' } }, { id: 's2', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nShip it is the goal.\n', expected_version: 1 } }, { id: 's3', name: 'memory_write', arguments: { path: 'projects/ship.md', content: 'Details.', expected_version: 0 } }] },
        { content: 'updated 2 documents' },
      ],
    });
    const { session } = await runToIdle(h, 'go');
    const workerFollowUp = requestsOf(bed.model.requests, 'worker')[1]!;
    const toolResults = workerFollowUp.body.messages.filter((message) => message['role'] === 'tool').map((message) => String(message['content']));
    expect(toolResults[0]).toMatch(/^Error: you are the worker: MAIN.md is kept by the background memory/);
    expect(toolResults[1]).toMatch(/^TODO.md saved \(version 1\)/);
    const summarizerSecond = requestsOf(bed.model.requests, 'summarizer')[1]!;
    const instructionAt = summarizerSecond.body.messages.findIndex((message) => String(message['content']).startsWith('<role-change'));
    const summarizerResults = summarizerSecond.body.messages.slice(instructionAt).filter((message) => message['role'] === 'tool').map((message) => String(message['content']));
    expect(summarizerResults[0]).toMatch(/^Error: TODO.md belongs to the worker/);
    expect(summarizerResults[1]).toMatch(/^MAIN.md saved \(version 2\)/);

    const todo = await h.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: session.id, path: 'TODO.md' });
    expect(todo?.content).toBe('- [ ] ship it');
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session.id, role: 'summarizer' } });
    const versions = await h.stores.documents.versionsByRun(run.id);
    expect(versions.map((version) => version.path).sort()).toEqual(['MAIN.md', 'projects/ship.md']);
    for (const version of versions) expect(version.author).toEqual({ kind: 'summarizer', memoryRunId: run.id, sessionId: session.id });
    const todoVersions = await h.stores.documents.versions(todo!.id);
    expect(todoVersions[0]?.author).toEqual({ kind: 'worker', sessionId: session.id });

    const updated = await h.waitForEvent('memory-updated');
    expect(updated.changes.map((change) => [change.path, change.added, change.removed])).toEqual([['MAIN.md', 1, 2], ['projects/ship.md', 1, 0]]);
    expect(updated.usage.cachedTokens).toBeGreaterThan(0);

    // A person reverts MAIN.md: the previous content comes back as a new version.
    const main = await h.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' });
    const reverted = await h.stores.documents.revert(main!.id, main!.version, { kind: 'person', userId: 'U1', name: 'Ada' });
    expect(reverted.version).toBe(3);
    const history = await h.stores.documents.versions(main!.id);
    expect(reverted.content).toBe(history.find((version) => version.version === 1)?.content);
  });

  it('keeps memory spaces of two channels apart, for documents and for search', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'the secret word is pelican' })],
      summarizer: [{ toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'notes.md', content: 'pelican', expected_version: 0 } }] }, { content: 'saved' }],
    });
    const first = await runToIdle(h, 'remember pelican', newThread('channel-a'));
    scriptRoles(bed.model, { worker: [at(100, { content: 'ok' })] });
    const second = await runToIdle(h, 'hello', newThread('channel-b'));
    expect(first.session.memorySpaceId).not.toBe(second.session.memorySpaceId);
    const listB = await h.stores.documents.list(second.session.memorySpaceId, second.session.id);
    expect(listB.map((document) => document.path)).toEqual(['MAIN.md']);
    expect(await h.stores.context.searchOriginals(second.session.memorySpaceId, 'pelican', second.runner.context.segment.id, 10, 'test')).toEqual([]);
    // In the first channel's space, another thread can find it.
    const third = await runToIdle(h, 'hello again', newThread('channel-a'));
    expect(third.session.memorySpaceId).toBe(first.session.memorySpaceId);
    const hits = await h.stores.context.searchOriginals(third.session.memorySpaceId, 'pelican', third.runner.context.segment.id, 10, 'test');
    expect(hits.length).toBeGreaterThan(0);
  });
});

describe('search of originals (R15)', () => {
  it('lists a message carried over two resets once, where it was first said', async () => {
    const h = await start();
    const { session } = await h.stores.sessions.open(newThread(), { title: 't', scope: 'channel' });
    const first = await h.stores.context.load(session.id);
    const init = [{ role: 'system' as const, content: 'init' }, { role: 'user' as const, content: 'memory' }];
    for (const [seq, message] of [...init, { role: 'user' as const, content: 'Ada wrote:\n> the pelican migration starts Monday' }].entries()) {
      await h.stores.context.append(first.segment.id, { seq, message, isInit: seq < 2, isMarker: false, memoryRunId: null });
    }
    for (let reset = 0; reset < 2; reset += 1) {
      const { segment, messages } = await h.stores.context.load(session.id);
      const carried = messages.filter((entry) => !entry.isInit);
      const next = [...init.map((message, seq) => ({ seq, message, isInit: true, isMarker: false, memoryRunId: null })), ...carried.map((entry, index) => ({ ...entry, seq: 2 + index }))];
      await h.stores.context.startSegment(session.id, { fromSegmentId: segment.id, messages: next, carriedMessages: carried.length, startTokens: 10, lastStep: 0 });
      await h.stores.context.append((await h.stores.context.load(session.id)).segment.id, { seq: next.length, message: { role: 'assistant', content: `pelican note ${reset + 2}` }, isInit: false, isMarker: false, memoryRunId: null });
    }
    const current = (await h.stores.context.load(session.id)).segment;
    expect(current.ordinal).toBe(3);
    const hits = await h.stores.context.searchOriginals(session.memorySpaceId, 'pelican', current.id, 10, 'test');
    // The person's message once (context 1), and the answer said in context 2 once; no copies.
    expect(hits.map((hit) => [hit.segmentOrdinal, hit.role]).sort()).toEqual([[1, 'user'], [2, 'assistant']]);
  });
});

describe('a summarizer that finishes in its writing step (R4)', () => {
  it('ends after a step whose last call is memory_done: one request, the edit stored, its note kept', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(1000, { content: 'done' })],
      summarizer: [{ toolCalls: [
        { id: 's1', name: 'memory_append', arguments: { path: 'MAIN.md', text: 'The billing database moves to Postgres 16.', expected_version: 1 } },
        { id: 's2', name: 'memory_done', arguments: { note: 'noted the billing move' } },
      ] }],
    });
    const { session } = await runToIdle(h, 'we move billing to Postgres 16');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(1);
    const instruction = String(requestsOf(bed.model.requests, 'summarizer')[0]!.body.messages.at(-1)?.['content']);
    expect(instruction).toContain('call memory_done last');
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session.id, role: 'summarizer' } });
    expect(run.status).toBe('succeeded');
    const updated = await h.waitForEvent('memory-updated');
    expect(updated.note).toBe('noted the billing move');
    const main = await h.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' });
    expect(main?.content).toContain('Postgres 16');
  });

  it('re-sends its note with the same text after a restart when no chat adapter took it (R17)', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(1000, { content: 'done' })],
      summarizer: [{ toolCalls: [
        { id: 's1', name: 'memory_append', arguments: { path: 'MAIN.md', text: 'The billing database moves to Postgres 16.', expected_version: 1 } },
        { id: 's2', name: 'memory_done', arguments: { note: 'noted the billing move\nand nothing else' } },
      ] }],
    });
    const { session } = await runToIdle(h, 'we move billing to Postgres 16');
    const first = await h.waitForEvent('memory-updated');
    expect(first.note).toBe('noted the billing move');
    await h.close(); // "crashed" before any adapter took the note

    const restarted = await start();
    await restarted.agent.recover();
    const again = await restarted.waitForEvent('memory-updated', (event) => event.session.id === session.id);
    expect([again.memoryRunId, again.note]).toEqual([first.memoryRunId, 'noted the billing move']);
  });

  it('goes on when a call of that step failed (it must see the failure), and still ends the old way, by an answer', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(1000, { content: 'done' })],
      summarizer: [
        { toolCalls: [
          { id: 's1', name: 'memory_append', arguments: { path: 'MAIN.md', text: 'stale version', expected_version: 7 } },
          { id: 's2', name: 'memory_done', arguments: { note: 'too early' } },
        ] },
        { content: 'no change' },
      ],
    });
    const { session } = await runToIdle(h, 'hello');
    expect(requestsOf(bed.model.requests, 'summarizer')).toHaveLength(2);
    const run = await bed.database.prisma.memoryRun.findFirstOrThrow({ where: { sessionId: session.id, role: 'summarizer' } });
    expect(run.status).toBe('succeeded');
  });

  it('is refused to the worker', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(100, { toolCalls: [{ id: 'w1', name: 'memory_done', arguments: {} }] }), at(100, { content: 'ok' })] });
    await runToIdle(h, 'hi');
    const result = h.events.find((event) => event.type === 'tool-call-end');
    expect(result?.type === 'tool-call-end' && result.ok).toBe(false);
  });
});
