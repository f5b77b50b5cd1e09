// R5: the decider may call no tool. Tool calls are answered "not needed" and never executed; the
// decision is a line exactly RESET_CONTEXT in its final message.
import type { AgentDeps } from '../agent-context.js';
import { runForkLoop, type ForkTarget, type MemoryRunResult } from './fork-loop.js';
import { deciderToolResult, readDecision } from '../prompts/memory-instructions.js';
import { contentText } from '../messages.js';

export type DeciderRun = ForkTarget;

export interface DeciderResult extends MemoryRunResult {
  reset: boolean;
}

/** Runs the decider; a failure means "no reset", and so does a decider that never concludes. */
export async function runDecider(deps: AgentDeps, run: DeciderRun): Promise<DeciderResult> {
  const result = await runForkLoop(deps, {
    ...run,
    role: 'decider',
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
