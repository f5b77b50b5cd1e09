// The baseline of B1: a worker loop that manages memory the way Codex and Claude Code do, by
// blocking compaction. When the context passes a threshold (85% of the window) the worker stops,
// the whole context is summarized by one model call (the summary request is appended to the
// context, so the prefix cache still applies), and the worker continues from fresh instructions +
// the task + the summary. With no threshold the context just grows (mode "none").
//
// Built from the same core pieces as Hippo's worker (buildRequest, callModel, ToolExecutor,
// init messages), without its persistence of every message or its memory forks.
import type { AgentDeps } from '../../src/core/agent-context.js';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { buildInitMessages } from '../../src/core/memory/init-messages.js';
import { contentText, type ChatMessage } from '../../src/core/messages.js';
import { buildRequest, callModel } from '../../src/core/loop/model-call.js';
import { renderSteer } from '../../src/core/prompts/prompts.js';
import type { SessionRecord } from '../../src/core/store.js';
import { compactionTag } from './scenarios.js';

/** The compaction request, in the spirit of Codex's "handoff summary" prompt. */
export const compactionInstruction = `${compactionTag}>
You have used most of your context window. Stop working on the task now and write a handoff summary for another instance of you that will continue the task from only this summary, the task, and the system instructions. Include: what the user asked for, what has been done so far and its results, decisions made and why, important details (names, numbers, files) needed to continue, and the exact next steps. Do not call tools.
</compaction-request>`;

export interface BlockingRunOptions {
  deps: AgentDeps;
  session: SessionRecord;
  segmentId: string;
  /** The person's request that starts the task. */
  task: string;
  /** Compact when the last prompt reached this percent of the window; null never compacts. */
  compactAtPercent: number | null;
  /** Stop after the first call whose prompt exceeded the window (a real provider refuses it). */
  stopAtOverflow: boolean;
  signal: AbortSignal;
}

export interface Compaction {
  /** Worker calls made before this compaction. */
  afterCall: number;
  tokensBefore: number;
  tokensAfter: number;
  /** performance.now() milliseconds around the compaction (the worker is stopped meanwhile). */
  start: number;
  end: number;
}

export interface BlockingRunOutcome {
  compactions: Compaction[];
  workerCalls: number;
  /** The first worker call whose prompt exceeded the window (a real provider would refuse it). */
  overflowCall: number | null;
  /** The final answer; empty when the run stopped at the overflow. */
  finalAnswer: string;
}

/** Runs the task to its final answer. */
export async function runBlockingSession(options: BlockingRunOptions): Promise<BlockingRunOutcome> {
  const { deps, session, segmentId, signal } = options;
  const window = deps.settings.contextWindow;
  const task: ChatMessage = { role: 'user', content: renderSteer({ authorName: 'Ada', text: options.task }) };
  let messages: ChatMessage[] = [...(await buildInitMessages(deps, session)), task];
  const scope = { sessionId: session.id, segmentId, signal };
  const outcome: BlockingRunOutcome = { compactions: [], workerCalls: 0, overflowCall: null, finalAnswer: '' };
  for (;;) {
    const response = await callModel(deps, buildRequest(deps, session.id, messages), { ...scope, role: 'worker' });
    outcome.workerCalls += 1;
    messages.push(response.message);
    // The same measure as Hippo's trigger (R2): provider prompt tokens of the last call.
    const tokens = response.usage?.promptTokens ?? estimateTokens(messages);
    if (tokens > window && outcome.overflowCall === null) {
      outcome.overflowCall = outcome.workerCalls;
      if (options.stopAtOverflow) return outcome;
    }
    const calls = response.message.tool_calls ?? [];
    if (calls.length === 0) {
      outcome.finalAnswer = contentText(response.message.content);
      return outcome;
    }
    for (const call of calls) {
      const result = await deps.tools.execute(call, {
        role: 'worker', sessionId: session.id, segmentId, memorySpaceId: session.memorySpaceId, contextWindow: window, signal,
      });
      messages.push({ role: 'tool', tool_call_id: call.id, content: result.content });
    }
    if (options.compactAtPercent !== null && tokens >= (window * options.compactAtPercent) / 100) {
      const start = performance.now();
      const summary = await callModel(deps, buildRequest(deps, session.id, [...messages, { role: 'user', content: compactionInstruction }]), {
        ...scope,
        role: 'summarizer',
      });
      messages = [
        ...(await buildInitMessages(deps, session)),
        task,
        { role: 'user', content: `<compaction-summary>\n${summary.message.content ?? ''}\n</compaction-summary>` },
      ];
      outcome.compactions.push({ afterCall: outcome.workerCalls, tokensBefore: tokens, tokensAfter: estimateTokens(messages), start, end: performance.now() });
    }
  }
}
