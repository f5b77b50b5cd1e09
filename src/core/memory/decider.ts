// R5: the decider may call no tool. Tool calls are answered "not needed" and never executed; the
// decision is a line exactly RESET_CONTEXT in its final message.
import type { AgentDeps } from '../agent-context.js';
import { runForkLoop, type MemoryRunResult } from './fork-loop.js';
import { deciderToolResult, readDecision } from '../prompts/memory-instructions.js';
import { contentText } from '../messages.js';
import type { ModelRequest } from '../model-client.js';

export interface DeciderRun {
  sessionId: string;
  segmentId: string;
  memoryRunId: string;
  request: ModelRequest;
  /** The worker's context at the fork as R2 measures it (tokens; see ForkRun.contextTokens). */
  contextTokens: number;
  signal: AbortSignal;
}

export interface DeciderResult extends MemoryRunResult {
  reset: boolean;
}

/** Runs the decider; a failure means "no reset", and so does a decider that never concludes. */
export async function runDecider(deps: AgentDeps, run: DeciderRun): Promise<DeciderResult> {
  const result = await runForkLoop(deps, {
    role: 'decider',
    sessionId: run.sessionId,
    segmentId: run.segmentId,
    memoryRunId: run.memoryRunId,
    request: run.request,
    contextTokens: run.contextTokens,
    signal: run.signal,
    maxSteps: deps.settings.deciderMaxSteps,
    timeoutMs: deps.settings.deciderTimeoutMs,
    // Every call gets an answer (strict providers reject unanswered calls); none is executed.
    answer: async (call) => ({ role: 'tool', tool_call_id: call.id, content: deciderToolResult }),
  });
  const decision = readDecision(result.finalMessage ? contentText(result.finalMessage.content) : null);
  if (decision.nearMiss) {
    deps.log.warn({ sessionId: run.sessionId, memoryRunId: run.memoryRunId, content: result.finalMessage?.content }, 'decider-signal-near-miss');
  }
  return { ...result, reset: decision.reset };
}
