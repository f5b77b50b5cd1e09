// The loop both forks run (R4, R5): call the model, answer its tool calls, repeat until it
// answers without tool calls or reaches its step cap, within a time cap.
import type { AgentDeps } from '../agent-context.js';
import { estimateTokens } from '../loop/context-window.js';
import { HippoError, InternalError } from '../errors.js';
import type { ChatMessage, ToolCall } from '../messages.js';
import { callModel } from '../loop/model-call.js';
import type { ModelRequest } from '../model-client.js';

export interface ForkRun {
  role: 'summarizer' | 'decider';
  sessionId: string;
  segmentId: string;
  memoryRunId: string;
  /** The fork request: the worker's request plus the role instruction. */
  request: ModelRequest;
  signal: AbortSignal;
  maxSteps: number;
  timeoutMs: number;
  /**
   * The worker's context as R2 measures it at the fork (tokens): with the fork's own messages it
   * sizes each request, and one that would not fit the window is not sent (R19).
   */
  contextTokens: number;
  /**
   * R4: the run ends after a step whose tool calls say it is finished (all answered first); returns
   * the run's final line then, else null.
   */
  finishedBy?: (calls: readonly ToolCall[]) => string | null;
  /** The tool message answering one call (executed, or a canned answer). */
  answer: (call: ToolCall, signal: AbortSignal) => Promise<ChatMessage>;
}

/** What a role's run gives its fork loop: the fork itself (the role adds its caps and tool answers). */
export type ForkTarget = Pick<ForkRun, 'sessionId' | 'segmentId' | 'memoryRunId' | 'request' | 'contextTokens' | 'signal'>;

export interface MemoryRunResult {
  /** Messages appended after the fork (the instruction, steps, tool results). */
  transcript: ChatMessage[];
  usage: { promptTokens: number; cachedTokens: number; completionTokens: number };
  /** The first message without tool calls; null when the step cap was reached first. */
  finalMessage: ChatMessage | null;
}

/**
 * A fork's request would not fit the window (R19): it was not sent. `firstCall`: nothing was sent
 * at all, so the run is recorded as skipped (a later run covers its range, R4).
 */
export class ForkTooLongError extends HippoError {
  constructor(readonly tokens: number, readonly contextWindow: number, readonly firstCall: boolean) {
    super('fork-too-long', `the fork's request (~${tokens} tokens) would not fit the ${contextWindow}-token window; not sent`);
  }
}

/** Runs the fork's loop; model failures and the time cap throw (with the partial result attached). */
export async function runForkLoop(deps: AgentDeps, run: ForkRun): Promise<MemoryRunResult> {
  const messages = [...run.request.messages];
  const result: MemoryRunResult = {
    transcript: [messages[messages.length - 1] as ChatMessage],
    usage: { promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
    finalMessage: null,
  };
  const signal = AbortSignal.any([run.signal, AbortSignal.timeout(run.timeoutMs)]);
  try {
    for (let step = 0; step < run.maxSteps; step += 1) {
      // The snapshot is measured as the worker's next call; what the fork appended, estimated.
      const tokens = run.contextTokens + estimateTokens(messages.slice(run.request.messages.length - 1));
      if (tokens >= deps.settings.contextWindow) throw new ForkTooLongError(tokens, deps.settings.contextWindow, step === 0);
      const response = await callModel(deps, { ...run.request, messages }, {
        sessionId: run.sessionId, segmentId: run.segmentId, memoryRunId: run.memoryRunId, role: run.role, signal,
      });
      await response.recorded;
      result.usage.promptTokens += response.usage?.promptTokens ?? 0;
      result.usage.cachedTokens += response.usage?.cachedTokens ?? 0;
      result.usage.completionTokens += response.usage?.completionTokens ?? 0;
      messages.push(response.message);
      result.transcript.push(response.message);
      if (!response.message.tool_calls?.length) {
        result.finalMessage = response.message;
        return result;
      }
      for (const call of response.message.tool_calls) {
        const answer = await run.answer(call, signal);
        messages.push(answer);
        result.transcript.push(answer);
      }
      // A run that writes once reads the context once: no further call just to say it is done.
      const finished = run.finishedBy?.(response.message.tool_calls) ?? null;
      if (finished !== null) {
        result.finalMessage = { role: 'assistant', content: finished };
        return result;
      }
    }
    return result;
  } catch (error) {
    throw Object.assign(error instanceof Error ? error : new InternalError(String(error), { cause: error }), { transcript: result.transcript, usage: result.usage });
  }
}
