// docs/memory-rules.md R19 (hard limit), R20 (carry-over budget) and the batch budget (R2, #28 item 5),
// on real Postgres with the real OpenAI client against a fake model that refuses a prompt longer
// than its window (400 context_length_exceeded), as OpenAI does.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { promptTokensOf } from '../fakes/fake-model-server.js';
import { newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { roleOf, type ScriptRole } from '../support/model-script.js';
import { readChunk, reader, resetsOf, scriptByRole, segmentsOf as segmentsIn, type RoleReplies } from '../support/reading-task.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();


type Script = RoleReplies;

const script = (scripts: Partial<Record<ScriptRole, Script>>) => scriptByRole(bed.model, scripts);

async function harness(window: number, tools: AnyTool[], settings: Record<string, number> = {}): Promise<AgentHarness> {
  bed.model.setContextWindow(window);
  bed.onCleanup(async () => bed.model.setContextWindow(undefined));
  return bed.harness({ tools, settings: { contextWindow: window, stepPercent: 10, ...settings } });
}

async function startTask(h: AgentHarness, text = 'read the whole report, chunk by chunk') {
  const { session } = await h.agent.submit(personMessage(newThread(), text), { startSession: true });
  return { session: session!, runner: await h.agent.runner(session!.id) };
}

const segmentsOf = (sessionId: string) => segmentsIn(bed.database, sessionId);

const resets = resetsOf;

describe('the hard limit (R19)', () => {
  it('finishes a task of about three windows with a deciding-keep decider: one answer, no refused request, forced resets, nothing lost', async () => {
    const window = 40_000;
    // 40 reads of ~3,000 tokens: about three windows of tool output.
    const h = await harness(window, [readChunk(12_000)]);
    script({
      worker: reader(40),
      // Every third summarizer fails: its range is covered by the next one or by the carry-over.
      summarizer: (_body, index) => (index % 3 === 2 ? { status: 400, errorMessage: 'summarizer refused' } : { content: 'noted' }),
    });
    const { session, runner } = await startTask(h);
    await h.waitForEvent('answer', (event) => event.text === 'all chunks read', 120_000);
    await runner.whenIdle();
    await runner.memory.settle();

    expect(h.events.filter((event) => event.type === 'answer')).toHaveLength(1);
    expect(h.events.filter((event) => event.type === 'error')).toHaveLength(0);
    expect(bed.model.refused).toHaveLength(0);
    const forced = resets(h).filter((event) => event.reason === 'context-full');
    expect(forced.length).toBeGreaterThanOrEqual(1);
    // The deciders all said keep: every reset was the system's.
    expect(forced).toHaveLength(resets(h).length);
    // No request of any role passed the window.
    for (const request of bed.model.requests) expect(Math.ceil((JSON.stringify(request.body.messages).length + JSON.stringify(request.body.tools ?? []).length) / 4)).toBeLessThanOrEqual(window);

    // Every message before each reset is in a succeeded summarizer's range or carried over.
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session.id, role: 'summarizer' } });
    const succeeded = new Set(runs.filter((run) => run.status === 'succeeded').map((run) => run.id));
    expect(runs.some((run) => run.status === 'failed')).toBe(true);
    const segments = await segmentsOf(session.id);
    expect(segments.length).toBe(resets(h).length + 1);
    for (const [index, segment] of segments.slice(0, -1).entries()) {
      const next = segments[index + 1]!;
      const boundary = segment.messages.findLast((message) => message.isMarker && message.memoryRunId !== null && succeeded.has(message.memoryRunId))?.seq ?? -1;
      const carriedKeys = new Set(next.messages.filter((message) => !message.isInit).map(messageKey));
      const lost = segment.messages.filter((message) => !message.isInit && !message.isMarker && message.seq > boundary && !carriedKeys.has(messageKey(message)));
      expect(lost.map(messageKey)).toEqual([]);
    }
  }, 180_000);

  it('asks for the reset while a summarizer runs, and the worker waits for it only past 90% (R6)', async () => {
    const window = 40_000;
    const h = await harness(window, [readChunk(8_000)], { stepPercent: 50 });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let summarizers = 0;
    script({
      worker: reader(30),
      // The summarizer forked at 50% runs until the test lets it go.
      summarizer: async () => {
        summarizers += 1;
        if (summarizers === 1) await held;
        return { content: 'noted' };
      },
    });
    const { runner } = await startTask(h);
    await until(() => runner.session.resetRequested, 60_000, 'a forced reset while the summarizer runs');
    expect(runner.memory.summarizerRunning).toBe(true);
    expect(runner.context.segment.ordinal).toBe(1);
    // The worker stops short of the window and waits for the summarizer.
    await until(() => runner.context.nextCallTokens() * 100 >= 90 * window, 60_000, 'the worker reaching 90%');
    release();
    await h.waitForEvent('context-reset', undefined, 60_000);
    await h.waitForEvent('answer', undefined, 120_000);
    expect(bed.model.refused).toHaveLength(0);
  }, 180_000);

  it('asks for the reset at exactly the hard limit, not one token later', async () => {
    const window = 40_000;
    // No memory step below 100%: nothing (a marker) is appended besides the answer.
    const h = await bed.harness({ settings: { contextWindow: window, stepPercent: 100 } });
    let promptTokens = 1_000;
    bed.model.respond((body) => (roleOf(body) === 'worker' ? { content: 'done', usage: { promptTokens, cachedTokens: 0, completionTokens: 1 } } : { content: 'noted' }));
    // A first session measures what the stored answer adds to the provider's count (R2).
    const probe = await startTask(h, 'short question');
    await h.waitForEvent('answer');
    await probe.runner.whenIdle();
    const answerTokens = probe.runner.context.nextCallTokens() - promptTokens;
    // The next worker call measures exactly 85% of the window.
    promptTokens = 0.85 * window - answerTokens;
    const { runner } = await startTask(h, 'short question');
    const reset = await h.waitForEvent('context-reset', (event) => event.reason === 'context-full', 30_000);
    expect(reset.tokensBefore).toBe(0.85 * window);
    await runner.whenIdle();
    expect(resets(h)).toHaveLength(1);
    // No chat adapter took the note: a restarted process sends it again, and it still says why.
    const restarted = await bed.harness({ settings: { contextWindow: window, stepPercent: 100 } });
    await restarted.agent.recover();
    const resent = await restarted.waitForEvent('context-reset', (event) => event.segmentId === reset.segmentId, 30_000);
    expect(resent.reason).toBe('context-full');
  }, 60_000);

  it('does not send a fork whose request would not fit the window: its run is skipped and the next one covers its range', async () => {
    const window = 40_000;
    const h = await bed.harness({ tools: [readChunk(4_000)], settings: { contextWindow: window, stepPercent: 3, hardLimitPercent: 95, resetWaitPercent: 99 } });
    bed.model.setContextWindow(window);
    bed.onCleanup(async () => bed.model.setContextWindow(undefined));
    // The worker's prompt is reported at 99.9% of the window: the forks after it cannot fit.
    bed.model.respond((body) => (roleOf(body) === 'worker' ? { content: 'done', usage: { promptTokens: window - 40, cachedTokens: 0, completionTokens: 1 } } : { content: 'noted' }));
    const { session, runner } = await startTask(h, 'short question');
    await h.waitForEvent('answer');
    await runner.whenIdle();
    await runner.memory.settle();
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session.id } });
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.every((run) => run.status === 'skipped')).toBe(true);
    expect(bed.model.requests.filter((request) => roleOf(request.body) !== 'worker')).toHaveLength(0);
  }, 60_000);

  it('resets and retries once when the provider refuses a call as too long (its window smaller than configured), then answers', async () => {
    const configured = 40_000;
    const h = await bed.harness({ tools: [readChunk(8_000)], settings: { contextWindow: configured, stepPercent: 10 } });
    // The provider's window is 25k: refused well below the configured hard limit (34k).
    bed.model.setContextWindow(25_000);
    bed.onCleanup(async () => bed.model.setContextWindow(undefined));
    script({ worker: (body, index) => (bed.model.refused.some((request) => roleOf(request.body) === 'worker') ? { content: 'answered after the reset' } : reader(30)(body, index)) });
    const { runner } = await startTask(h);
    await h.waitForEvent('answer', (event) => event.text === 'answered after the reset', 60_000);
    await runner.whenIdle();
    expect(bed.model.refused.filter((request) => roleOf(request.body) === 'worker')).toHaveLength(1);
    expect(resets(h)).toHaveLength(1);
    expect(resets(h)[0]?.reason).toBe('context-full');
    expect(h.events.filter((event) => event.type === 'error')).toHaveLength(0);
  }, 120_000);

  it('fails with one error when the retry is refused too, and resume then drives again (the failed drive is not stuck)', async () => {
    const configured = 40_000;
    const h = await bed.harness({ tools: [readChunk(8_000)], settings: { contextWindow: configured, stepPercent: 50 } });
    bed.model.setContextWindow(12_000);
    bed.onCleanup(async () => bed.model.setContextWindow(undefined));
    script({ worker: (body, index) => (index >= 8 ? { content: 'resumed and done' } : reader(30)(body, index)) });
    const { session, runner } = await startTask(h);
    await h.waitForEvent('error', undefined, 60_000);
    await runner.whenIdle();
    expect(runner.state).toBe('failed');
    const before = resets(h).length;
    expect(before).toBeGreaterThanOrEqual(1);
    // The operator's model is back to a bigger window; a person says resume.
    bed.model.setContextWindow(30_000);
    await h.agent.resume(session.id);
    await h.waitForEvent('answer', (event) => event.text === 'resumed and done', 60_000);
  }, 120_000);

  it('goes on after a person resets a session whose drive failed, without a new message', async () => {
    const h = await bed.harness({ settings: { contextWindow: 40_000 } });
    let failing = true;
    bed.model.respond((body) => (roleOf(body) === 'worker' ? (failing ? { status: 400, errorMessage: 'bad request' } : { content: 'went on' }) : { content: 'noted' }));
    const { session, runner } = await startTask(h, 'do it');
    await h.waitForEvent('error');
    await runner.whenIdle();
    failing = false;
    await h.agent.reset(session.id);
    await h.waitForEvent('answer', (event) => event.text === 'went on', 30_000);
  }, 60_000);
});

describe('the carry-over budget (R20)', () => {
  it('after two failed summarizers, a forced reset carries stubs within the budget and starts under the hard limit', async () => {
    const window = 40_000;
    const h = await harness(window, [readChunk(12_000)], { stepPercent: 30 });
    script({
      worker: reader(12),
      summarizer: (_body, index) => (index < 2 ? { status: 400, errorMessage: 'summarizer refused' } : { content: 'noted' }),
    });
    const { session, runner } = await startTask(h);
    const reset = await h.waitForEvent('context-reset', undefined, 60_000);
    expect(reset.reason).toBe('context-full');
    const failed = await bed.database.prisma.memoryRun.count({ where: { sessionId: session.id, role: 'summarizer', status: 'failed' } });
    expect(failed).toBe(2);
    expect(reset.tokensAfter * 100).toBeLessThan(85 * window);
    const [, second] = await segmentsOf(session.id);
    const carried = second!.messages.filter((message) => !message.isInit);
    expect(estimateTokens(carried.map((message) => JSON.parse(message.content) as unknown))).toBeLessThanOrEqual(0.3 * window);
    // Older results are stubs naming the tool; the last batch is carried whole.
    const tools = carried.filter((message) => message.role === 'tool').map((message) => String((JSON.parse(message.content) as { content: string }).content));
    expect(tools.some((content) => content.startsWith('[read_chunk result'))).toBe(true);
    expect(tools.at(-1)).toMatch(/^chunk \d+:/);
    await h.waitForEvent('answer', undefined, 120_000);
    await runner.whenIdle();
    expect(bed.model.refused).toHaveLength(0);
  }, 180_000);

  it('a single huge tool result: the reset waits for a summarizer over it, then carries a stub, and does not loop', async () => {
    const window = 40_000;
    // One result of ~4,500 tokens (its cap) against a carry-over budget of 2,000 (5%).
    const huge = defineTool({ name: 'read_all', description: 'Reads everything.', input: z.object({}), execute: async () => 'the whole report '.repeat(8_000) }) as AnyTool;
    const h = await harness(window, [huge], { stepPercent: 3, carryBudgetPercent: 5 });
    let deciders = 0;
    script({
      worker: (_body, index) => (index === 0 ? { toolCalls: [{ id: 'all', name: 'read_all', arguments: {} }] } : { content: `answer ${index}` }),
      // The summarizers forked by steps fail; the one the reset forks succeeds.
      summarizer: (_body, index) => (index === 0 ? { status: 400, errorMessage: 'summarizer refused' } : { content: 'noted' }),
      decider: () => (deciders++ === 0 ? { content: 'Finished work.\nRESET_CONTEXT' } : { content: 'KEEP_CONTEXT' }),
    });
    const { session, runner } = await startTask(h);
    await h.waitForEvent('context-reset', undefined, 60_000);
    await runner.whenIdle();
    await runner.memory.settle();
    expect(resets(h)).toHaveLength(1);
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session.id, role: 'summarizer' }, orderBy: { startedAt: 'asc' } });
    expect(runs.at(-1)?.status).toBe('succeeded');
    const [, second] = await segmentsOf(session.id);
    const carried = second!.messages.filter((message) => !message.isInit);
    expect(estimateTokens(carried.map((message) => JSON.parse(message.content) as unknown))).toBeLessThanOrEqual(0.05 * window);
    expect(carried.some((message) => message.content.includes('[read_all result'))).toBe(true);
    expect(bed.model.refused).toHaveLength(0);
  }, 120_000);

  it('a tiny window: the init messages alone pass the hard limit, and resets do not loop', async () => {
    // The init messages and tools take ~3,200 tokens: a new segment starts above 85% of 3,600.
    const h = await harness(3_600, [readChunk(200)]);
    script({ worker: reader(3, 'tiny done') });
    const { runner } = await startTask(h, 'hi');
    await h.waitForEvent('answer', (event) => event.text === 'tiny done', 60_000);
    await runner.whenIdle();
    // The first forced reset starts a segment above the hard limit; in it no reset is forced again
    // (at most one more, if the provider refuses a call as too long: R19's retry, not a loop).
    expect(resets(h).length).toBeGreaterThanOrEqual(1);
    expect(resets(h).length).toBeLessThanOrEqual(2);
    expect(resets(h)[0]!.tokensAfter * 100).toBeGreaterThanOrEqual(85 * 3_600);
    expect(bed.model.refused.filter((request) => roleOf(request.body) === 'worker').length).toBeLessThanOrEqual(1);
  }, 60_000);
});

describe('the batch budget (R2, R19)', () => {
  it('six reads at 45% of the window in one batch do not push the next call past the window', async () => {
    const window = 20_000;
    // Each read alone is within its own cap (10% of the window + 2,000 characters): ~2,500 tokens.
    const h = await harness(window, [readChunk(40_000)], { stepPercent: 10 });
    const batch = Array.from({ length: 6 }, (_, index) => ({ id: `r${index}`, name: 'read_chunk', arguments: { n: index } }));
    let batchAt = 0;
    script({
      worker: (body, index) => {
        const used = promptTokensOf(body);
        // Single reads until the context holds 45% of the window, then six in one batch.
        if (batchAt === 0 && used < 0.45 * window) return { toolCalls: [{ id: `one${index}`, name: 'read_chunk', arguments: { n: 100 + index } }] };
        if (batchAt === 0) {
          batchAt = used;
          return { toolCalls: batch };
        }
        return { content: 'read them all' };
      },
    });
    const { runner } = await startTask(h);
    await h.waitForEvent('answer', (event) => event.text === 'read them all', 60_000);
    await runner.whenIdle();
    expect(batchAt).toBeGreaterThanOrEqual(0.45 * window);
    expect(batchAt).toBeLessThan(0.6 * window);
    expect(bed.model.refused).toHaveLength(0);
    // The batch shared the room under the hard limit: the next call reads all six results (their
    // heads and tails), with no reset in between that would have left only stubs.
    expect(resets(h)).toHaveLength(0);
    const next = bed.model.requests.filter((request) => roleOf(request.body) === 'worker').at(-1)!;
    const results = next.body.messages.filter((message) => message['role'] === 'tool' && String(message['tool_call_id']).startsWith('r'));
    expect(results.map((message) => String(message['content']).slice(0, 8))).toEqual(Array.from({ length: 6 }, (_, index) => `chunk ${index}:`));
  }, 120_000);
});

/** What identifies a message across segments: a tool call id, the calls of an assistant message, or its text. */
function messageKey(message: { role: string; content: string; toolCallId: string | null; toolCallIds: string[] }): string {
  if (message.toolCallId) return `tool:${message.toolCallId}`;
  if (message.toolCallIds.length > 0) return `calls:${message.toolCallIds.join(',')}`;
  return `${message.role}:${message.content}`;
}
