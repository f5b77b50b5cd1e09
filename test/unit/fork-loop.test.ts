// The memory forks' loop (src/core/memory/fork-loop.ts) as each role runs it: the decider answers
// its own tool calls "not needed" and reads its decision (R5), the summarizer executes its calls
// within a step cap and a time cap (R4), and a fork that would not fit the window is not sent
// (R19). Core alone: the scripted model and real tools, no HTTP, no database.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CancelledError, MemoryRunCapped } from '../../src/core/errors.js';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { runDecider } from '../../src/core/memory/decider.js';
import { ForkTooLongError, type ForkTarget } from '../../src/core/memory/fork-loop.js';
import { runSummarizer } from '../../src/core/memory/summarizer.js';
import type { ChatMessage } from '../../src/core/messages.js';
import { readDecision } from '../../src/core/prompts/memory-instructions.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { coreDeps, type CoreDeps } from '../support/core-deps.js';
import { ScriptedModel, type Script } from '../support/scripted-model.js';
import { until } from '../support/wait.js';

/** A tool every role may call; counts its runs. */
function countingTool(): { tool: AnyTool; runs: () => number } {
  let runs = 0;
  const tool = defineTool({ name: 'count', description: 'Counts.', input: z.object({}), roles: ['worker', 'summarizer', 'decider'], execute: async () => `count ${++runs}` }) as AnyTool;
  return { tool, runs: () => runs };
}

/** A fork of a short worker context: system, one person's message, the role's instruction. */
function fork(deps: CoreDeps, role: 'summarizer' | 'decider', options: { contextTokens?: number; signal?: AbortSignal } = {}): ForkTarget & { memorySpaceId: string } {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are Hippo.' },
    { role: 'user', content: 'Ada wrote:\n> ship it on Friday' },
    { role: 'user', content: `<role-change role="${role}">…</role-change>` },
  ];
  return {
    sessionId: 's1', segmentId: 'g1', memoryRunId: 'r1', memorySpaceId: 'm1',
    request: { model: deps.settings.model, messages, tools: deps.tools.definitions, cacheKey: 's1' },
    contextTokens: options.contextTokens ?? 1_000,
    signal: options.signal ?? new AbortController().signal,
  };
}

function setUp(script: Script, settings: Parameters<typeof coreDeps>[0]['settings'] = {}) {
  const model = new ScriptedModel(script);
  const counting = countingTool();
  const deps = coreDeps({ model, tools: [counting.tool], settings });
  return { model, deps, runs: counting.runs };
}

describe('the decider (R5)', () => {
  it('answers its tool calls "not needed", executes none, and reads the decision from its final answer', async () => {
    const { model, deps, runs } = setUp({
      decider: [
        { toolCalls: [{ id: 'd1', name: 'count' }, { id: 'd2', name: 'memory_write', arguments: { path: 'MAIN.md', content: 'x', expected_version: 1 } }] },
        { content: 'RESET_CONTEXT is tempting but\nKEEP_CONTEXT' },
      ],
    });
    const result = await runDecider(deps, fork(deps, 'decider'));
    model.assertAllUsed();
    expect(runs()).toBe(0);
    expect(result.reset).toBe(false);
    const second = model.callsOf('decider')[1]!.request.messages;
    const answers = second.filter((message) => message.role === 'tool');
    expect(answers.map((message) => message.tool_call_id)).toEqual(['d1', 'd2']);
    for (const answer of answers) expect(String(answer.content)).toMatch(/^Not needed/);
    // Each call is recorded with its role (R14), and the fork reused the worker's request (R1).
    expect(deps.usageRows.map((row) => row.role)).toEqual(['decider', 'decider']);
    expect(model.calls[0]!.request.cacheKey).toBe('s1');
  });

  it('resets only on a line that is exactly RESET_CONTEXT', async () => {
    const { model, deps } = setUp({ decider: [{ content: 'Most of this is noise.\nRESET_CONTEXT' }] });
    expect((await runDecider(deps, fork(deps, 'decider'))).reset).toBe(true);
    model.assertAllUsed();
    expect(readDecision('I would say RESET_CONTEXT here')).toEqual({ reset: false, nearMiss: true });
    expect(readDecision('**RESET_CONTEXT**')).toEqual({ reset: false, nearMiss: true });
    expect(readDecision(' RESET_CONTEXT')).toEqual({ reset: false, nearMiss: true });
    expect(readDecision(null)).toEqual({ reset: false, nearMiss: false });
    expect(readDecision('KEEP_CONTEXT')).toEqual({ reset: false, nearMiss: false });
  });

  it('keeps the context when it never concludes within its step cap', async () => {
    const call = { toolCalls: [{ name: 'count' }] };
    const { model, deps } = setUp({ decider: [call, call] }, { deciderMaxSteps: 2 });
    expect((await runDecider(deps, fork(deps, 'decider'))).reset).toBe(false);
    model.assertAllUsed();
  });
});

describe('summarizer caps (R4)', () => {
  it('fails a summarizer that keeps calling tools past its step cap, after executing each call', async () => {
    const call = { toolCalls: [{ name: 'count' }] };
    const { model, deps, runs } = setUp({ summarizer: [call, call, call] }, { summarizerMaxSteps: 3 });
    const failure = await runSummarizer(deps, fork(deps, 'summarizer')).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MemoryRunCapped);
    expect((failure as Error).message).toBe('summarizer stopped at its cap of 3 steps');
    model.assertAllUsed();
    expect(runs()).toBe(3);
    // The partial run rides on the error, to be recorded: the instruction, then 3 calls and 3 results.
    expect((failure as { transcript: ChatMessage[] }).transcript).toHaveLength(7);
  });

  it('fails a summarizer that runs past its time cap, stopping its request', async () => {
    const { model, deps } = setUp({ summarizer: [{ hang: true }] }, { summarizerTimeoutMs: 50 });
    const failure = await runSummarizer(deps, fork(deps, 'summarizer')).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CancelledError);
    expect((failure as Error).message).toMatch(/cancelled: .*(timeout|timed out)/i);
    model.assertAllUsed();
    // The failed call is recorded too (R14), with its error.
    expect(deps.usageRows).toEqual([expect.objectContaining({ role: 'summarizer', error: expect.stringMatching(/cancelled/) })]);
  });

  it('stops at once when its session is stopped, with the stop as the reason', async () => {
    const stop = new AbortController();
    const { model, deps } = setUp({ summarizer: [{ hang: true }] });
    const running = runSummarizer(deps, fork(deps, 'summarizer', { signal: stop.signal }));
    await until(() => model.calls.length === 1, 5_000, 'the summarizer call');
    stop.abort('stopped by Ada');
    await expect(running).rejects.toThrow('cancelled: stopped by Ada');
  });
});

describe('a fork that would not fit the window (R19)', () => {
  it('is not sent when it would reach the window exactly: the error says nothing was sent at all', async () => {
    const { model, deps } = setUp({}, { contextWindow: 10_000 });
    // The worker's context as measured, plus the fork's own instruction, estimated.
    const instruction = estimateTokens(fork(deps, 'decider').request.messages.slice(-1));
    const failure = await runDecider(deps, fork(deps, 'decider', { contextTokens: 10_000 - instruction })).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ForkTooLongError);
    expect((failure as ForkTooLongError).firstCall).toBe(true);
    expect(model.calls).toHaveLength(0);
  });

  it('is sent when it stays one token under the window', async () => {
    const { model, deps } = setUp({ decider: [{ content: 'KEEP_CONTEXT' }] }, { contextWindow: 10_000 });
    const instruction = estimateTokens(fork(deps, 'decider').request.messages.slice(-1));
    expect((await runDecider(deps, fork(deps, 'decider', { contextTokens: 10_000 - instruction - 1 }))).reset).toBe(false);
    model.assertAllUsed();
  });
});

