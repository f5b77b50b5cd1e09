// One model call with its bookkeeping: usage recorded per call and role (R14), latency, errors.
import type { AgentDeps } from '../agent-context.js';
import { boundImages } from './image-budget.js';
import { ModelError } from '../errors.js';
import type { AgentRole, ChatMessage } from '../messages.js';
import type { ModelRequest, ModelResponse } from '../model-client.js';
import type { ModelCallRecord } from '../store.js';

export interface CallScope {
  sessionId: string;
  segmentId: string;
  memoryRunId?: string;
  role: AgentRole;
  signal: AbortSignal;
  onTextDelta?: (delta: string) => void;
  onResponseStart?: () => void;
  /**
   * The caller stores the answer at once and writes the usage row of a successful call with it
   * (ContextStore.append's `usage`): one statement instead of two. Failed calls are recorded here.
   */
  usageWithAnswer?: boolean;
}

/**
 * The request every role sends for a context: same model, tools and cache key (R1), and the same
 * images: the latest few within the per-request limits (the others described, image-budget.ts).
 */
export function buildRequest(deps: Pick<AgentDeps, 'settings' | 'tools'>, sessionId: string, messages: readonly ChatMessage[]): ModelRequest {
  const { requestMaxImages, requestMaxImageBytes } = deps.settings;
  const shown = boundImages(messages, { maxImages: requestMaxImages, maxImageChars: Math.ceil(requestMaxImageBytes / 3) * 4 });
  return { model: deps.settings.model, messages: shown, tools: deps.tools.definitions, cacheKey: sessionId };
}

/** Characters of every string in a value (a request's size, without serializing it). */
export function textChars(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 0;
  let sum = 0;
  if (Array.isArray(value)) for (const item of value) sum += textChars(item);
  else for (const key of Object.keys(value)) sum += textChars((value as Record<string, unknown>)[key]);
  return sum;
}

/** The tools' definitions are one array for the agent's life: counted once. */
const toolChars = new WeakMap<object, number>();

function definitionChars(tools: readonly unknown[]): number {
  let chars = toolChars.get(tools);
  if (chars === undefined) toolChars.set(tools, (chars = textChars(tools)));
  return chars;
}

/** A model's answer, while its usage row is still being written. */
export interface ModelCallResult extends ModelResponse {
  /** The call's usage row (R14): the caller writes it when the scope asked for usageWithAnswer. */
  usageRecord: ModelCallRecord;
  /**
   * The usage row being written beside whatever the caller stores next, so the two writes
   * overlap (resolved at once with usageWithAnswer). Never rejects (a failed write is logged);
   * await it before the step is over.
   */
  recorded: Promise<void>;
}

/** Calls the model and records usage; failures are recorded too, then rethrown. */
export async function callModel(deps: AgentDeps, request: ModelRequest, scope: CallScope): Promise<ModelCallResult> {
  const started = Date.now();
  const row = (response: ModelResponse | null, error: string | null): ModelCallRecord => ({
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
  const record = (response: ModelResponse | null, error: string | null) => deps.stores.usage.record(row(response, error));
  let response: ModelResponse;
  try {
    // Measured before the client serializes it: a request too large to send is never built as JSON.
    const chars = textChars(request.messages) + definitionChars(request.tools);
    if (chars > deps.settings.requestMaxChars) throw new ModelError(`the request is too large to send (${Math.round(chars / 1048576)} MB of text and images; the limit is ${Math.round(deps.settings.requestMaxChars / 1048576)} MB)`, false);
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
  const usageRecord = row(response, null);
  if (scope.usageWithAnswer) return { ...response, usageRecord, recorded: Promise.resolve() };
  // A paid answer is never dropped because its usage row could not be written.
  const recorded = deps.stores.usage.record(usageRecord).catch((error: unknown) => deps.log.warn({ sessionId: scope.sessionId, err: String(error) }, 'usage-record-failed'));
  return { ...response, usageRecord, recorded };
}
