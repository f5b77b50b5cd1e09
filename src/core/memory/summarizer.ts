// R4: the summarizer loops model → tools → model until it answers without tool calls, within a
// step cap and a time cap. Its output is its writes to the memory documents.
import type { AgentDeps } from '../agent-context.js';
import { MemoryRunCapped } from '../errors.js';
import type { ChatMessage } from '../messages.js';
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
    throw Object.assign(new MemoryRunCapped('summarizer', settings.summarizerMaxSteps), result);
  }
  return result;
}

/**
 * R17: a summarizer run's one-line note, read from its transcript, so the first delivery and a
 * re-sent one after a restart say the same: the first line of its final answer, or the note of the
 * memory_done call its last step ended with (that run has no final answer in its transcript).
 * The transcript may be a stored one: its shape is checked, not assumed.
 */
export function summarizerNote(transcript: readonly unknown[]): string {
  const last = transcript.at(-1) as Partial<ChatMessage> | undefined;
  let text = '';
  if (last?.role === 'assistant' && typeof last.content === 'string' && !last.tool_calls?.length) text = last.content;
  else if (last?.role === 'tool') {
    const step = transcript.findLast((message) => (message as Partial<ChatMessage> | undefined)?.role === 'assistant') as Partial<ChatMessage> | undefined;
    const done = (Array.isArray(step?.tool_calls) ? step.tool_calls.at(-1) : undefined)?.function;
    if (done?.name === memoryDoneTool && typeof done.arguments === 'string') text = doneNote(done.arguments);
  }
  return text.trim().split('\n')[0]?.trim().slice(0, 300) ?? '';
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
