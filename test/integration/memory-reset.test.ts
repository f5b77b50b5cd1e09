// docs/memory-rules.md R6–R9 on real Postgres and the fake model server.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { carryOver } from '../../src/core/memory/carry-over.js';
import type { StoredMessage } from '../../src/core/store.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { at, conversation, gate, requestsOf, scriptRoles, shape, slowTool } from '../support/model-script.js';
import { until } from '../support/wait.js';

const echo = defineTool({ name: 'echo', description: 'Echoes text.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo: ${text}` }) as AnyTool;

const bed = useTestBed();

async function start(tools: AnyTool[] = [echo]): Promise<AgentHarness> {
  return bed.harness({ tools, settings: { contextWindow: 10_000 } });
}

describe('reset (R6–R8)', () => {
  it('resets an idle worker once the running summarizer finished, carries over, and takes a steer sent meanwhile after the reset', async () => {
    const summarizerGate = gate();
    const deciderGate = gate();
    const h = await start([echo]);
    scriptRoles(bed.model, {
      worker: [
        at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] }),
        at(700, { content: 'first part done' }),
        at(300, { content: 'continued in the new context' }),
      ],
      summarizer: async (_body, index) => {
        if (index === 0) {
          await summarizerGate.promise;
          return { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nWe are migrating the billing database.\n', expected_version: 1 } }] };
        }
        return { content: 'updated MAIN.md' };
      },
      decider: async () => {
        await deciderGate.promise;
        return { content: 'Most of this is finished work.\nRESET_CONTEXT' };
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'migrate billing'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    // The worker answers and goes idle; the decider says reset while the summarizer still runs.
    await h.waitForEvent('answer', (event) => event.text === 'first part done');
    deciderGate.open();
    await until(() => runner.session.resetRequested);
    // The reset waits for the running summarizer; a steer sent now waits for the reset (R9).
    await h.agent.submit(personMessage(thread, 'sent during the reset', 'Grace'), { startSession: false });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(runner.context.segment.ordinal).toBe(1);
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(2);
    summarizerGate.open();

    const reset = await h.waitForEvent('context-reset');
    expect(reset.segmentOrdinal).toBe(2);
    const answer = await h.waitForEvent('answer', (event) => event.text === 'continued in the new context');
    expect(answer.segmentId).toBe(reset.segmentId);
    const third = requestsOf(bed.model.requests, 'worker')[2]!;
    // Fresh init messages: MAIN.md as the summarizer left it.
    expect(String(third.body.messages[1]?.['content'])).toContain('We are migrating the billing database.');
    // Carry-over starts after the marker of the successful summarizer; the steer comes after it.
    expect(shape(conversation(third.body))).toEqual(['assistant:first part done', 'user:sent during the reset']);
    await runner.whenIdle();
    expect(runner.session.resetRequested).toBe(false);
    const segments = await bed.database.prisma.segment.findMany({ where: { sessionId: session!.id }, orderBy: { ordinal: 'asc' } });
    expect(segments.map((segment) => [segment.ordinal, segment.endedAt !== null, segment.carriedMessages])).toEqual([[1, true, 0], [2, false, 1]]);
    // No immediate re-trigger: the new segment starts at its own current step, tools array included.
    expect(segments[1]!.lastStep).toBeGreaterThan(0);
    await runner.memory.settle();
    expect(requestsOf(bed.model.requests, 'summarizer').filter((request) => request.body.messages[1]?.['content'] === third.body.messages[1]?.['content'])).toHaveLength(0);
  });

  it('never stalls the worker: it goes on while the summarizer runs, holds steers, then resets without waiting (R6)', async () => {
    const summarizerGate = gate();
    const steerSent = gate();
    const slow = slowTool('slow step finished');
    const h = await bed.harness({ tools: [echo, slow.tool], settings: { contextWindow: 10_000 } });
    let runner: Awaited<ReturnType<typeof h.agent.runner>> | undefined;
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        if (index === 0) return at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] });
        if (index === 1) {
          await until(() => runner?.session.resetRequested === true);
          return at(700, { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'two' } }] });
        }
        if (index === 2) {
          await steerSent.promise;
          return at(800, { toolCalls: [{ id: 'c3', name: 'slow_step', arguments: {} }] });
        }
        return at(300, { content: 'continued in the new context' });
      },
      summarizer: async (_body, index) => {
        if (index === 0) {
          await summarizerGate.promise;
          return { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nStep one is done.\n', expected_version: 1 } }] };
        }
        return { content: 'updated MAIN.md' };
      },
      decider: [{ content: 'Most of this is finished work.\nRESET_CONTEXT' }],
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'start'), { startSession: true });
    runner = await h.agent.runner(session!.id);
    await until(() => runner!.session.resetRequested);
    // A steer sent while the reset is pending waits for it (R9), even though the worker goes on.
    await h.agent.submit(personMessage(thread, 'sent during the deferral', 'Grace'), { startSession: false });
    steerSent.open();
    // No stall: the worker made its third call in the old segment while the summarizer still ran.
    await until(() => requestsOf(bed.model.requests, 'worker').length === 3);
    expect(runner.memory.summarizerRunning).toBe(true);
    expect(runner.context.segment.ordinal).toBe(1);
    expect(shape(conversation(requestsOf(bed.model.requests, 'worker')[2]!.body)).at(-1)).toBe('tool(c2)');
    summarizerGate.open();
    await until(() => !runner!.memory.summarizerRunning);
    slow.open();
    // The first checkpoint with no summarizer running stops the worker for the reset.
    const end = await h.waitForEvent('run-end');
    expect(end.reason).toBe('reset');
    const reset = await h.waitForEvent('context-reset');
    expect(reset.carriedMessages).toBe(4);
    await h.waitForEvent('answer', (event) => event.text === 'continued in the new context');
    const fourth = requestsOf(bed.model.requests, 'worker')[3]!;
    expect(String(fourth.body.messages[1]?.['content'])).toContain('Step one is done.');
    // Carry-over: everything after the summarizer's marker; the held steer comes after the reset.
    expect(shape(conversation(fourth.body))).toEqual(['assistant→[c2]', 'tool(c2)', 'assistant→[c3]', 'tool(c3)', 'user:sent during the deferral']);
    // No fork while the reset was pending.
    const forks = (role: 'summarizer' | 'decider') => requestsOf(bed.model.requests, role).filter((request) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change'));
    expect(forks('summarizer')).toHaveLength(1);
    expect(forks('decider')).toHaveLength(1);
    // ... but the steps crossed meanwhile were consumed (stored: 700 tokens of 10k is step 6).
    const ended = await bed.database.prisma.segment.findFirstOrThrow({ where: { sessionId: session!.id, ordinal: 1 } });
    expect(ended.lastStep).toBeGreaterThanOrEqual(6);
    await runner.whenIdle();
    await runner.memory.settle();
  });

  it('stops at the next checkpoint and waits for the summarizer once the context passed 90% (R6)', async () => {
    const summarizerGate = gate();
    const h = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, resetWaitPercent: 90 } });
    let runner: Awaited<ReturnType<typeof h.agent.runner>> | undefined;
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        if (index === 0) return at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] });
        if (index === 1) {
          await until(() => runner?.session.resetRequested === true);
          return at(9_500, { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'two' } }] });
        }
        return at(300, { content: 'done after the reset' });
      },
      summarizer: async (_body, index) => {
        if (index === 0) await summarizerGate.promise;
        return { content: 'no change' };
      },
      decider: [{ content: 'Mostly finished work.\nRESET_CONTEXT' }],
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'start'), { startSession: true });
    runner = await h.agent.runner(session!.id);
    // 95% of the window: the worker stops although the summarizer still runs.
    const end = await h.waitForEvent('run-end');
    expect(end.reason).toBe('reset');
    expect(runner.memory.summarizerRunning).toBe(true);
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(2);
    summarizerGate.open();
    await h.waitForEvent('answer', (event) => event.text === 'done after the reset');
    await runner.whenIdle();
    await runner.memory.settle();
  });

  it('ignores the marker of a failed summarizer when computing the carry-over', async () => {
    const h = await start();
    let firstRunId = '';
    let sessionId = '';
    scriptRoles(bed.model, {
      worker: async (_body, index) => {
        if (index === 1) {
          // Let summarizer 1 succeed before the next step is crossed.
          await until(async () => (await bed.database.prisma.memoryRun.count({ where: { id: firstRunId, status: 'succeeded' } })) === 1);
        }
        if (index === 2) {
          // Answer only once decider 2 asked for the reset (so the worker stops right after).
          await until(async () => (await bed.database.prisma.session.count({ where: { id: sessionId, resetRequested: true } })) === 1);
        }
        return [
          at(400, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] }),
          at(700, { toolCalls: [{ id: 'c2', name: 'echo', arguments: { text: 'two' } }] }),
          at(710, { content: 'answer in the old context' }),
        ][index] ?? at(300);
      },
      summarizer: (body) => {
        const instruction = String(body.messages.at(-1)?.['content']);
        return instruction.includes('round="1"') ? { content: 'no change' } : { status: 400, errorMessage: 'summarizer broke' };
      },
      decider: (body) => (String(body.messages.at(-1)?.['content']).includes('round="2"') ? { content: 'RESET_CONTEXT' } : { content: 'KEEP_CONTEXT' }),
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'go'), { startSession: true });
    sessionId = session!.id;
    await until(async () => {
      const run = await bed.database.prisma.memoryRun.findFirst({ where: { sessionId, role: 'summarizer', round: 1 } });
      firstRunId = run?.id ?? '';
      return firstRunId !== '';
    });
    const reset = await h.waitForEvent('context-reset');
    const failed = await h.waitForEvent('memory-run-failed');
    expect(failed.role).toBe('summarizer');
    // Marker 1 (succeeded) is the boundary; marker 2 (failed) is not, and is not carried.
    const runner = await h.agent.runner(sessionId);
    expect(shape(runner.context.entries.filter((entry) => !entry.isInit).map((entry) => entry.message))).toEqual([
      'assistant→[c2]',
      'tool(c2)',
      'assistant:answer in the old context',
    ]);
    expect(reset.carriedMessages).toBe(3);
  });

  it('keeps a person\'s pause through a reset, and ignores a second reset request meanwhile', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(100, { content: 'hello' })] });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await h.agent.pause(session!.id);
    expect(runner.state).toBe('paused');
    expect(await h.agent.reset(session!.id)).toBe(true);
    expect(await h.agent.reset(session!.id)).toBe(false);
    await h.waitForEvent('context-reset');
    await runner.whenIdle();
    expect(runner.session.paused).toBe(true);
    expect(runner.state).toBe('paused');
    // Stored too: a restart after the reset finds the session still paused.
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).toMatchObject({ paused: true, resetRequested: false });
    expect(await bed.database.prisma.segment.count({ where: { sessionId: session!.id } })).toBe(2);
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(1);
  });

  it('ignores a decider that answers after its segment ended', async () => {
    const deciderGate = gate();
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'first' }), at(100, { content: 'second' })],
      decider: async () => {
        await deciderGate.promise;
        return { content: 'RESET_CONTEXT' };
      },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await h.agent.reset(session!.id); // a person resets first
    await h.waitForEvent('context-reset');
    await runner.whenIdle();
    deciderGate.open(); // the old segment's decider now says reset
    await runner.memory.settle();
    await runner.whenIdle();
    expect(await bed.database.prisma.segment.count({ where: { sessionId: session!.id } })).toBe(2);
    expect(h.events.filter((event) => event.type === 'context-reset')).toHaveLength(1);
  });

  it('still resets when the summarizer it waits for fails (behavior 36)', async () => {
    const summarizerGate = gate();
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'hello' })],
      summarizer: async () => {
        await summarizerGate.promise;
        return { status: 400, errorMessage: 'summarizer broke' };
      },
      decider: [{ content: 'RESET_CONTEXT' }],
    });
    const { session } = await h.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await until(() => runner.session.resetRequested);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(runner.context.segment.ordinal).toBe(1); // waiting for the summarizer
    summarizerGate.open();
    const reset = await h.waitForEvent('context-reset');
    // The failed run's marker is no boundary: everything after the init messages is carried.
    expect(reset.carriedMessages).toBe(2);
    expect(h.events.some((event) => event.type === 'memory-run-failed')).toBe(true);
  });

  it('does not reset when the decider fails, or says so only in a step with tool calls (behaviors 24, 25)', async () => {
    const h = await start();
    scriptRoles(bed.model, {
      worker: [at(400, { content: 'one' }), at(700, { content: 'two' })],
      decider: (body) =>
        String(body.messages.find((message) => String(message['content']).startsWith('<role-change role="decider"'))?.['content']).includes('round="1"')
          ? { status: 400, errorMessage: 'decider broke' }
          : body.messages.at(-1)?.['role'] === 'tool'
            ? { content: 'Thinking it over.' }
            : { content: 'RESET_CONTEXT', toolCalls: [{ id: 'd1', name: 'memory_list', arguments: {} }] },
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'one'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();
    await h.agent.submit(personMessage(thread, 'two'), { startSession: false });
    await (await h.agent.runner(session!.id)).whenIdle(); // after the wake-up submit started
    await runner.memory.settle();
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session!.id, role: 'decider' }, orderBy: { round: 'asc' } });
    expect(runs.map((run) => [run.status, run.decision])).toEqual([['failed', null], ['succeeded', 'keep']]);
    expect(h.events.some((event) => event.type === 'context-reset')).toBe(false);
    expect(runner.context.segment.ordinal).toBe(1);
  });

  it('resets an idle worker at once and leaves it idle when there is no backlog', async () => {
    const h = await start();
    scriptRoles(bed.model, { worker: [at(100, { content: 'hello' })] });
    const { session } = await h.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await h.agent.reset(session!.id);
    const reset = await h.waitForEvent('context-reset');
    await runner.whenIdle();
    // Nothing after a final answer needs carrying when no summarizer ran: everything is carried.
    expect(reset.carriedMessages).toBe(2);
    expect(runner.state).toBe('idle');
    expect(requestsOf(bed.model.requests, 'worker')).toHaveLength(1);
    // The visible context of the new segment is exactly what follows its init messages.
    expect(runner.context.entries.filter((entry) => entry.isInit)).toHaveLength(2);
  });
});

describe('the new segment after a reset (R2, R6)', () => {
  it('starts at the step its first call measures, tools array included, so it does not fork at once', async () => {
    // A tool whose definition alone is ~15% of the window, and a provider that counts it.
    const wide = defineTool({ name: 'wide', description: `Described at length. ${'x'.repeat(6_000)}`, input: z.object({}), execute: async () => 'ok' }) as AnyTool;
    const h = await bed.harness({ tools: [wide], settings: { contextWindow: 10_000, stepPercent: 10 } });
    const providerCount = (body: { messages: unknown[]; tools?: unknown[] }) => ({
      promptTokens: Math.ceil(JSON.stringify(body.messages).length / 4) + Math.ceil(JSON.stringify(body.tools ?? []).length / 4), cachedTokens: 0, completionTokens: 5,
    });
    scriptRoles(bed.model, {
      worker: (body, index) => ({ content: index === 0 ? 'first' : 'after the reset', usage: providerCount(body) }),
      decider: [{ content: 'Finished.\nRESET_CONTEXT' }],
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'hello'), { startSession: true });
    const reset = await h.waitForEvent('context-reset', (event) => event.session.id === session!.id);
    const runner = await h.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();
    const forksBefore = requestsOf(bed.model.requests, 'summarizer').length + requestsOf(bed.model.requests, 'decider').length;
    await h.agent.submit(personMessage(thread, 'again'), { startSession: false });
    await h.waitForEvent('answer', (event) => event.text === 'after the reset');
    await runner.whenIdle();
    await runner.memory.settle();
    expect(runner.context.segment.id).toBe(reset.segmentId);
    expect(requestsOf(bed.model.requests, 'summarizer').length + requestsOf(bed.model.requests, 'decider').length).toBe(forksBefore);
  });
});

describe('carryOver', () => {
  const entry = (seq: number, message: StoredMessage['message'], flags: Partial<StoredMessage> = {}): StoredMessage => ({
    seq, message, isInit: false, isMarker: false, memoryRunId: null, ...flags,
  });
  const init = entry(0, { role: 'system', content: 'init' }, { isInit: true });
  const user = entry(1, { role: 'user', content: 'Ada wrote:\n> go' });
  const marker = (seq: number, runId: string) => entry(seq, { role: 'user', content: '<memory-checkpoint/>' }, { isMarker: true, memoryRunId: runId });
  const assistant = entry(3, { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'echo', arguments: '{}' } }] });
  const tool = entry(4, { role: 'tool', tool_call_id: 'a', content: 'x' });

  it('keeps the messages after the last marker of a successful run', () => {
    expect(carryOver([init, user, marker(2, 'r1'), assistant, tool], new Set(['r1'])).map((item) => item.seq)).toEqual([3, 4]);
  });
  it('uses the latest of several successful markers', () => {
    const later = entry(5, { role: 'assistant', content: 'done' });
    expect(carryOver([init, user, marker(2, 'r1'), assistant, tool, marker(5, 'r2'), later], new Set(['r1', 'r2'])).map((item) => item.seq)).toEqual([5]);
  });
  it('carries everything without a successful marker, and never carries markers or init messages', () => {
    expect(carryOver([init, user, marker(2, 'r1'), assistant, tool], new Set()).map((item) => item.seq)).toEqual([1, 3, 4]);
  });
  it('keeps the last exchange when nothing follows the boundary, never starting with a tool message', () => {
    const result = carryOver([init, user, assistant, tool, marker(5, 'r1')], new Set(['r1']));
    expect(result.map((item) => item.seq)).toEqual([1, 3, 4]);
    expect(result[0]?.message.role).toBe('user');
  });
});
