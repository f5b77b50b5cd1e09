// R6 and R20 at a reset, on real Postgres: a tool call and its results are carried or dropped
// together, never apart (the fake Messages API refuses a result whose call is gone, as the real one
// does), and images count in the carry-over: the older ones become a line naming their file, so a
// segment never starts above the hard limit and its forks are sent.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AttachmentSaver } from '../../src/core/attachment-saver.js';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { startFakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import type { FakeModelServer, FakeReply, FakeRequestBody } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { gate, roleOf, type ScriptRole } from '../support/model-script.js';
import { readChunk, reader, resetsOf, scriptByRole, segmentsOf as segmentsIn, type RoleReplies } from '../support/reading-task.js';
import { useTestBed } from '../support/test-bed.js';
import { noisePng } from '../support/images.js';

const bed = useTestBed();


type Script = RoleReplies;

const script = (scripts: Partial<Record<ScriptRole, Script>>) => scriptByRole(bed.model, scripts);

async function startTask(h: AgentHarness, text: string) {
  const { session } = await h.agent.submit(personMessage(newThread(), text), { startSession: true });
  return { session: session!, runner: await h.agent.runner(session!.id) };
}

const segmentsOf = (sessionId: string) => segmentsIn(bed.database, sessionId);

const resets = resetsOf;

describe('the last-resort trim (R6, R20)', () => {
  it('at a 40k window, a call with huge text and one large result is carried with its result, and work goes on (Messages API)', async () => {
    const window = 40_000;
    // The Messages API refuses a tool result whose call is not right before it, as the real one does.
    const anthropic = await startFakeAnthropicServer({ contextWindow: window });
    bed.onCleanup(() => anthropic.close());
    const started = gate();
    const release = gate();
    let saves = 0;
    const save = defineTool({
      name: 'save', description: 'Saves the report.', input: z.object({}),
      execute: async () => {
        saves += 1;
        started.open();
        await release.promise;
        return `saved: ${'the report as written '.repeat(1_000)}`;
      },
    }) as AnyTool;
    const h = await createAgentHarness({
      database: bed.database, model: anthropic as unknown as FakeModelServer, provider: 'anthropic', tools: [save],
      // A carry-over budget of 2,000 tokens: the call's own text (~9,000 tokens) does not fit it.
      settings: { model: 'claude-sonnet-4-5', contextWindow: window, carryBudgetPercent: 5, prices: null },
    });
    bed.onCleanup(() => h.close());
    let workerCalls = 0;
    anthropic.respond((body) => {
      const role = roleOf(body);
      if (role === 'summarizer') return { status: 400, errorMessage: 'summarizer refused' };
      if (role === 'decider') return { content: 'All of it matters.\nKEEP_CONTEXT' };
      workerCalls += 1;
      return workerCalls === 1 ? { content: 'Thinking it through: '.repeat(1_800), toolCalls: [{ id: 'save1', name: 'save', arguments: {} }] } : { content: 'saved it, going on' };
    });
    const { session, runner } = await startTask(h, 'save the report');
    // A person resets while the call runs: the worker stops right after its result (R6).
    await started.promise;
    expect(await h.agent.reset(session.id)).toBe(true);
    release.open();
    const reset = await h.waitForEvent('context-reset', undefined, 60_000);
    const answer = await h.waitForEvent('answer', (event) => event.text === 'saved it, going on', 60_000);
    expect(answer.segmentId).toBe(reset.segmentId);
    await runner.whenIdle();
    expect(h.events.filter((event) => event.type === 'error')).toHaveLength(0);

    const [, second] = await segmentsOf(session.id);
    // What the reset copied (later messages of the segment are the worker's own).
    const carried = second!.messages.filter((message) => !message.isInit).slice(0, second!.carriedMessages)
      .map((message) => JSON.parse(message.content) as { role: string; tool_call_id?: string; tool_calls?: Array<{ id: string }>; content: unknown });
    // The call and its result are carried together (the call's text cut, the result a stub), in budget.
    const result = carried.findIndex((message) => message.role === 'tool');
    expect(result).toBeGreaterThan(0);
    expect(carried[result - 1]?.tool_calls?.map((call) => call.id)).toEqual(['save1']);
    expect(carried[result]?.tool_call_id).toBe('save1');
    expect(estimateTokens(carried)).toBeLessThanOrEqual(0.05 * window);
    // The first worker request of the new segment ends with the call and its result, and was answered.
    const next = anthropic.requests.filter((request) => roleOf(request.body) === 'worker').at(-1)!;
    expect(next.body.messages.at(-1)?.['role']).toBe('tool');
    // The call was carried with its result: it did not run again.
    expect(saves).toBe(1);
  }, 120_000);
});

describe('images in the carry-over (R20)', () => {
  it('four 1 MiB screenshots: the reset replaces the older ones by a note naming their file, the segment starts under the hard limit, and its forks are sent', async () => {
    const window = 20_000;
    // Four distinct real PNGs of about 1 MiB each (noise, 600×584), saved in the workspace.
    const shots = await Promise.all([0, 1, 2, 3].map(async () => `data:image/png;base64,${(await noisePng(600, 584)).toString('base64')}`));
    const screenshot = (index: number) => shots[index]!;
    const attachments: AttachmentSaver = {
      save: async (_session, files) => files.map((file, index) => ({ name: file.name, mimeType: 'image/png', size: file.size, savedAs: `files/${file.name}`, note: null, imageUrl: screenshot(index) })),
    };
    const h = await bed.harness({ tools: [readChunk(10_000)], attachments, settings: { contextWindow: window, stepPercent: 10, images: true } });
    // Usage as a provider counts it: an image costs its pixels (about 1,000 tokens), not its bytes.
    const withUsage = (body: FakeRequestBody, reply: FakeReply): FakeReply => {
      let images = 0;
      const text = JSON.stringify(body, (key, value: unknown) => (key === 'url' && typeof value === 'string' && value.startsWith('data:') ? ((images += 1), '') : value));
      return { ...reply, usage: { promptTokens: Math.ceil(text.length / 4) + images * 1_000, cachedTokens: 0, completionTokens: 5 } };
    };
    script({ worker: (body, index) => withUsage(body, reader(1, 'the dialog is cut off')(body, index) as FakeReply) });
    const files = [0, 1, 2, 3].map((index) => ({ name: `shot${index}.png`, mimeType: 'image/png', size: 1024 * 1024, ref: `F${index}` }));
    const { session } = await h.agent.submit({ ...personMessage(newThread(), 'what is wrong in these screenshots?'), attachments: files }, { startSession: true });
    const runner = await h.agent.runner(session!.id);
    const reset = await h.waitForEvent('context-reset', undefined, 60_000);
    expect(reset.tokensBefore).toBeGreaterThan(window);
    expect(reset.tokensAfter * 100).toBeLessThan(85 * window);
    await h.waitForEvent('answer', (event) => event.text === 'the dialog is cut off', 60_000);
    await runner.whenIdle();
    await runner.memory.settle();

    // The newest screenshot is still shown; the older ones say where their file is.
    const [, second] = await segmentsOf(session!.id);
    const shared = second!.messages.find((message) => !message.isInit && message.content.includes('what is wrong'))!;
    const parts = (JSON.parse(shared.content) as { content: Array<{ type: string; text?: string }> }).content;
    expect(parts.filter((part) => part.type === 'image_url')).toHaveLength(1);
    for (const name of ['shot0', 'shot1', 'shot2']) expect(parts.some((part) => part.text?.includes(`saved in the workspace as files/${name}.png`))).toBe(true);
    // The segment's forks were sent, not skipped as too long for the window.
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { segmentId: second!.id } });
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.filter((run) => run.status === 'skipped')).toEqual([]);
    expect(resets(h)).toHaveLength(1);
  }, 120_000);
});
