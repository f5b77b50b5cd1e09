// R5: the decider may call no tool. Tool calls are answered "not needed" and never executed; the
// decision is a line exactly RESET_CONTEXT in its final message.
import type { AgentDeps } from './agent-context.js';
import type { ChatMessage } from './messages.js';
import { deciderToolResult, readDecision } from './memory-instructions.js';
import { callModel } from './model-call.js';
import type { ModelRequest } from './model-client.js';
import type { MemoryRunResult } from './summarizer.js';

export interface DeciderRun {
  sessionId: string;
  segmentId: string;
  memoryRunId: string;
  request: ModelRequest;
  signal: AbortSignal;
}

export interface DeciderResult extends MemoryRunResult {
  reset: boolean;
}

/** Runs the decider; a failure means "no reset". */
export async function runDecider(deps: AgentDeps, run: DeciderRun): Promise<DeciderResult> {
  const messages = [...run.request.messages];
  const transcript: ChatMessage[] = [messages[messages.length - 1] as ChatMessage];
  const usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0 };
  const signal = AbortSignal.any([run.signal, AbortSignal.timeout(deps.settings.deciderTimeoutMs)]);
  for (let step = 0; step < deps.settings.deciderMaxSteps; step += 1) {
    const response = await callModel(deps, { ...run.request, messages }, {
      sessionId: run.sessionId,
      segmentId: run.segmentId,
      memoryRunId: run.memoryRunId,
      role: 'decider',
      signal,
    });
    usage.promptTokens += response.usage?.promptTokens ?? 0;
    usage.cachedTokens += response.usage?.cachedTokens ?? 0;
    usage.completionTokens += response.usage?.completionTokens ?? 0;
    messages.push(response.message);
    transcript.push(response.message);
    const calls = response.message.tool_calls ?? [];
    if (calls.length === 0) {
      const decision = readDecision(response.message.content);
      if (decision.nearMiss) {
        deps.log.warn({ sessionId: run.sessionId, memoryRunId: run.memoryRunId, content: response.message.content }, 'decider-signal-near-miss');
      }
      return { transcript, usage, finalMessage: response.message, reset: decision.reset };
    }
    for (const call of calls) {
      // Every call gets an answer (strict providers reject unanswered calls); none is executed.
      const answer: ChatMessage = { role: 'tool', tool_call_id: call.id, content: deciderToolResult };
      messages.push(answer);
      transcript.push(answer);
    }
  }
  return { transcript, usage, finalMessage: null, reset: false };
}
