// One model call with its bookkeeping: usage recorded per call and role (R14), latency, errors.
import type { AgentDeps } from './agent-context.js';
import { ModelError } from './errors.js';
import type { AgentRole, ChatMessage } from './messages.js';
import type { ModelRequest, ModelResponse } from './model-client.js';

export interface CallScope {
  sessionId: string;
  segmentId: string;
  memoryRunId?: string;
  role: AgentRole;
  signal: AbortSignal;
  onTextDelta?: (delta: string) => void;
  onResponseStart?: () => void;
}

/** The request every role sends for a context: same model, tools and cache key (R1). */
export function buildRequest(deps: Pick<AgentDeps, 'settings' | 'tools'>, sessionId: string, messages: readonly ChatMessage[]): ModelRequest {
  return { model: deps.settings.model, messages, tools: deps.tools.definitions, cacheKey: sessionId };
}

/** A model's answer, while its usage row is still being written. */
export interface ModelCallResult extends ModelResponse {
  /**
   * The usage row (R14) being written beside whatever the caller stores next, so the two writes
   * overlap. Never rejects (a failed write is logged); await it before the step is over.
   */
  recorded: Promise<void>;
}

/** Calls the model and records usage; failures are recorded too, then rethrown. */
export async function callModel(deps: AgentDeps, request: ModelRequest, scope: CallScope): Promise<ModelCallResult> {
  const started = Date.now();
  const record = (response: ModelResponse | null, error: string | null) =>
    deps.stores.usage.record({
      sessionId: scope.sessionId,
      segmentId: scope.segmentId,
      memoryRunId: scope.memoryRunId ?? null,
      role: scope.role,
      model: request.model,
      promptTokens: response?.usage?.promptTokens ?? 0,
      cachedTokens: response?.usage?.cachedTokens ?? 0,
      completionTokens: response?.usage?.completionTokens ?? 0,
      cacheWriteTokens: response?.usage?.cacheWriteTokens ?? null,
      latencyMs: response?.latencyMs ?? Date.now() - started,
      error,
    });
  let response: ModelResponse;
  try {
    response = await deps.model.complete(request, {
      role: scope.role,
      signal: scope.signal,
      ...(scope.onTextDelta ? { onTextDelta: scope.onTextDelta } : {}),
      ...(scope.onResponseStart ? { onResponseStart: scope.onResponseStart } : {}),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await record(null, message).catch(() => undefined);
    if (error instanceof ModelError || (error instanceof Error && error.name === 'CancelledError')) throw error;
    throw new ModelError(message, false, undefined, { cause: error });
  }
  // A paid answer is never dropped because its usage row could not be written.
  const recorded = record(response, null).catch((error: unknown) => deps.log.warn({ sessionId: scope.sessionId, err: String(error) }, 'usage-record-failed'));
  return { ...response, recorded };
}
