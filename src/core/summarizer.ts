// R4: the summarizer loops model → tools → model until it answers without tool calls, within a
// step cap and a time cap. Its output is its writes to the memory documents.
import type { AgentDeps } from './agent-context.js';
import type { ChatMessage } from './messages.js';
import { callModel } from './model-call.js';
import type { ModelRequest } from './model-client.js';

export interface SummarizerRun {
  sessionId: string;
  segmentId: string;
  memorySpaceId: string;
  memoryRunId: string;
  /** The fork request: the worker's request plus the instruction. */
  request: ModelRequest;
  signal: AbortSignal;
}

export interface MemoryRunResult {
  /** Messages appended after the fork (the instruction, steps, tool results). */
  transcript: ChatMessage[];
  usage: { promptTokens: number; cachedTokens: number; completionTokens: number };
  finalMessage: ChatMessage | null;
}

/** Runs the summarizer; throws when it fails or hits a cap (its marker then does not count, R6). */
export async function runSummarizer(deps: AgentDeps, run: SummarizerRun): Promise<MemoryRunResult> {
  const messages = [...run.request.messages];
  const transcript: ChatMessage[] = [messages[messages.length - 1] as ChatMessage];
  const usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0 };
  const signal = AbortSignal.any([run.signal, AbortSignal.timeout(deps.settings.summarizerTimeoutMs)]);
  for (let step = 0; step < deps.settings.summarizerMaxSteps; step += 1) {
    const response = await callModel(deps, { ...run.request, messages }, {
      sessionId: run.sessionId,
      segmentId: run.segmentId,
      memoryRunId: run.memoryRunId,
      role: 'summarizer',
      signal,
    });
    usage.promptTokens += response.usage?.promptTokens ?? 0;
    usage.cachedTokens += response.usage?.cachedTokens ?? 0;
    usage.completionTokens += response.usage?.completionTokens ?? 0;
    messages.push(response.message);
    transcript.push(response.message);
    if (!response.message.tool_calls?.length) return { transcript, usage, finalMessage: response.message };
    for (const call of response.message.tool_calls) {
      const outcome = await deps.tools.execute(call, {
        role: 'summarizer',
        sessionId: run.sessionId,
        segmentId: run.segmentId,
        memorySpaceId: run.memorySpaceId,
        memoryRunId: run.memoryRunId,
        contextWindow: deps.settings.contextWindow,
        signal,
      });
      const result: ChatMessage = { role: 'tool', tool_call_id: call.id, content: outcome.content };
      messages.push(result);
      transcript.push(result);
    }
  }
  throw Object.assign(new Error(`summarizer stopped at its cap of ${deps.settings.summarizerMaxSteps} steps`), { transcript, usage });
}
