// `status` draws the session's context over time (adapters/chat/context-curve.ts) from what is
// stored: a bar per worker step, `^` where memory ran, `R` under each reset.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { statusText } from '../../src/adapters/chat/command-runner.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { at, scriptRoles } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';
import { startSession } from '../support/sessions.js';

const echo = defineTool({ name: 'echo', description: 'Echoes text.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo: ${text}` }) as AnyTool;

const bed = useTestBed();

describe('status: the context curve', () => {
  it('shows every step of a session with two resets, the memory checkpoint and both resets', async () => {
    // A window of 10,000 tokens and a checkpoint every 25%: only the second step (30%) crosses one.
    const h = await bed.harness({ tools: [echo], settings: { contextWindow: 10_000, stepPercent: 25 } });
    scriptRoles(bed.model, {
      worker: [
        at(2_000, { toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'one' } }] }),
        at(3_000, { toolCalls: [{ id: 'e2', name: 'echo', arguments: { text: 'two' } }] }),
        at(3_100, { content: 'first part done' }),
        at(1_000, { content: 'second part done' }),
        at(500, { content: 'third part done' }),
      ],
    });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'start'), { startSession: true });
    const id = session!.id;
    const runner = await h.agent.runner(id);
    for (const [answer, ordinal] of [['first part done', 2], ['second part done', 3]] as const) {
      await h.waitForEvent('answer', (event) => event.text === answer);
      await runner.whenIdle();
      expect(await h.agent.reset(id)).toBe(true);
      await h.waitForEvent('context-reset', (event) => event.segmentOrdinal === ordinal);
      await h.agent.submit(personMessage(thread, `go on ${ordinal}`), { startSession: false });
    }
    await h.waitForEvent('answer', (event) => event.text === 'third part done');
    await runner.whenIdle();
    await runner.memory.settle();
    const status = await h.agent.status(id);
    expect(status.contextHistory.steps.map((step) => [step.segment, step.tokens])).toEqual([[1, 2_000], [1, 3_000], [1, 3_100], [2, 1_000], [3, 500]]);
    // A summarizer forked in the third context before its first step (a person's request right
    // after the reset) marks no step of the second.
    const third = await bed.database.prisma.segment.findFirstOrThrow({ where: { sessionId: id, ordinal: 3 } });
    const lastCall = await bed.database.prisma.modelCall.findFirstOrThrow({ where: { sessionId: id, role: 'worker' }, orderBy: { id: 'desc' } });
    await bed.database.prisma.memoryRun.create({ data: { sessionId: id, segmentId: third.id, role: 'summarizer', round: 1, forkPoint: 3, status: 'succeeded', startedAt: new Date(lastCall.createdAt.getTime() - 1) } });
    expect((await h.stores.usage.contextHistory(id, 100)).steps.map((step) => step.memory)).toEqual([false, true, false, false, false]);
    // Bounded: only the newest steps are read, the rest counted.
    const newest = await h.stores.usage.contextHistory(id, 2);
    expect(newest).toMatchObject({ omitted: 3, steps: [{ segment: 2, tokens: 1_000 }, { segment: 3, tokens: 500 }] });
    const lines = statusText(status).split('\n');
    const title = lines.findIndex((line) => line.startsWith('**Context since the start:'));
    expect(lines.slice(title)).toEqual([
      '**Context since the start: 5 steps, 2 resets**',
      '```',
      '▂▃▃│▁│▁',
      ' ^ R R',
      '```',
      '▁…█ context per step, of the window · ^ memory ran · │ reset (R asked for, F context full)',
    ]);
  }, 60_000);

  it('says nothing of a curve before the first step', async () => {
    const h = await bed.harness({});
    const session = await startSession(h.stores, newThread());
    const status = await h.agent.status(session.id);
    expect(status.contextHistory.steps).toEqual([]);
    expect(statusText(status)).not.toContain('Context since the start');
  });
});
