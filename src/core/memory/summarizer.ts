// R4: the summarizer loops model → tools → model until it answers without tool calls, within a
// step cap and a time cap. Its output is its writes to the memory documents.
import type { AgentDeps } from '../agent-context.js';
import { runForkLoop, type ForkTarget, type MemoryRunResult } from './fork-loop.js';
import { memoryDoneTool } from './memory-tools.js';

export type { MemoryRunResult } from './fork-loop.js';

export interface SummarizerRun extends ForkTarget {
  memorySpaceId: string;
}

/** Runs the summarizer; throws when it fails or hits a cap (its marker then does not count, R6). */
export async function runSummarizer(deps: AgentDeps, run: SummarizerRun): Promise<MemoryRunResult> {
  const { settings } = deps;
  const failedCalls = new Set<string>();
  const result = await runForkLoop(deps, {
    ...run,
    role: 'summarizer',
    maxSteps: settings.summarizerMaxSteps,
    timeoutMs: settings.summarizerTimeoutMs,
    answer: async (call, signal) => {
      const outcome = await deps.tools.execute(call, {
        role: 'summarizer',
        sessionId: run.sessionId,
        segmentId: run.segmentId,
        memorySpaceId: run.memorySpaceId,
        memoryRunId: run.memoryRunId,
        contextWindow: settings.contextWindow,
        signal,
      });
      if (!outcome.ok) failedCalls.add(call.id);
      return { role: 'tool', tool_call_id: call.id, content: outcome.content };
    },
    // R4: memory_done as the step's last call ends the run, unless a call of that step failed (the
    // summarizer must see the failure and fix it first).
    finishedBy: (calls) => {
      const last = calls.at(-1);
      if (last?.function.name !== memoryDoneTool || calls.some((call) => failedCalls.has(call.id))) return null;
      return doneNote(last.function.arguments);
    },
  });
  if (!result.finalMessage) {
    throw Object.assign(new Error(`summarizer stopped at its cap of ${settings.summarizerMaxSteps} steps`), result);
  }
  return result;
}

/** The note of a memory_done call (its final line); "no change" when it gave none. */
function doneNote(argumentsText: string): string {
  try {
    const note = (JSON.parse(argumentsText) as { note?: unknown }).note;
    return typeof note === 'string' && note.trim() !== '' ? note.trim() : 'no change';
  } catch {
    return 'no change';
  }
}
