// ModelClient over an OpenAI-compatible Chat Completions endpoint, streamed. Retries are ours (the
// SDK's are off) so that a call is retried only before any chunk arrived: once text has streamed
// to the user, a retry would show it twice.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { CancelledError, ContextTooLongError, ModelError } from '../../core/errors.js';
import type { ChatMessage, ToolCall } from '../../core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, ModelUsage } from '../../core/model-client.js';
import { modelFetch } from './model-fetch.js';

/** The logger calls this client makes (a pino logger fits). */
export interface ModelClientLog {
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Options of `OpenAIModelClient`. */
export interface OpenAIModelClientOptions {
  /** Sent as the bearer token. */
  apiKey: string;
  /** Endpoint base URL including `/v1` (default: the OpenAI API). */
  baseURL?: string;
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** An attempt fails when no byte arrives for this long, in milliseconds (default 120,000). */
  timeoutMs?: number;
  /**
   * The longest a call waits for its answer to start, over all attempts and back-offs, in
   * milliseconds (default: no limit beyond the attempts). A stream that is producing is never cut
   * by it; only `timeoutMs` of silence ends one.
   */
  totalTimeoutMs?: number;
  /** First backoff delay, doubled per retry, with jitter, in milliseconds (default 1,000). */
  baseDelayMs?: number;
  /** Upper bound of a backoff delay, in milliseconds (default 30,000). */
  maxDelayMs?: number;
  /** Receives `model-call-retry` (warn) and `model-call-end` (debug). */
  log?: ModelClientLog;
}

// Server-sent retry hints beyond this are ignored in favour of our own backoff (as the SDK does).
const maxRetryAfterMs = 60_000;

interface Failure {
  message: string;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
  /** The endpoint refused the prompt as longer than the model's window (R19). */
  contextTooLong?: boolean;
}

/** Raised inside an attempt when our inactivity timer fired. */
class AttemptTimeout extends Error {}

/** Raised inside an attempt when the call's total budget ran out before its answer started. */
class BudgetExhausted extends Error {}

/** The endpoint answered 200 with a web page (a UI or login page at the base URL), not the API. */
class WebPageAnswer extends Error {}

const webPageHint = "a web page instead of the API's JSON: OPENAI_BASE_URL must be the API's base URL (usually ending in /v1), not a web UI";

/** Throws WebPageAnswer when a successful response is HTML (the SDK would read it as an empty answer). */
function refuseWebPage(response: Response): void {
  if (/text\/html/i.test(response.headers.get('content-type') ?? '')) throw new WebPageAnswer(webPageHint);
}

/** What a look at the endpoint found (`checkEndpoint`). */
export interface EndpointCheck {
  status: 'ok' | 'unreachable' | 'unauthorized';
  /** One line for the log: what failed and what to check. */
  detail: string;
}

/** Calls an OpenAI-compatible Chat Completions API with streaming, retrying transient failures. */
export class OpenAIModelClient implements ModelClient {
  private readonly client: OpenAI;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly totalTimeoutMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly log: ModelClientLog | undefined;

  constructor(options: OpenAIModelClientOptions) {
    this.maxRetries = options.maxRetries ?? 4;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.totalTimeoutMs = options.totalTimeoutMs ?? Number.POSITIVE_INFINITY;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.log = options.log;
    // Everything explicit: the SDK would otherwise read OPENAI_* variables itself (config is ours).
    this.client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0, timeout: this.timeoutMs, logLevel: 'off', fetch: modelFetch });
  }

  /** The endpoint as errors name it: host, port and path of the base URL (no credentials). */
  get endpoint(): string {
    try {
      const url = new URL(this.client.baseURL);
      return `${url.host}${url.pathname.replace(/\/$/, '')}`;
    } catch {
      return this.client.baseURL;
    }
  }

  /** Lists the endpoint's models once (GET /models) to see whether it answers and takes the key. */
  async checkEndpoint(timeoutMs = 10_000): Promise<EndpointCheck> {
    try {
      refuseWebPage((await this.client.models.list({ timeout: timeoutMs, maxRetries: 0 }).withResponse()).response);
      return { status: 'ok', detail: `model endpoint ${this.endpoint} answers` };
    } catch (error) {
      const failure = describeFailure(error, this.endpoint);
      const status = failure.status === 401 || failure.status === 403 ? 'unauthorized' : 'unreachable';
      return { status, detail: failure.message };
    }
  }

  /** Streams one completion and returns the aggregated assistant message. */
  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    const startedAt = performance.now();
    const deadline = startedAt + this.totalTimeoutMs;
    const { signal } = options;
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw cancelled(signal);
      const progress = { sawChunk: false };
      try {
        const { message, usage } = await this.attempt(request, options, progress, deadline);
        const latencyMs = Math.round(performance.now() - startedAt);
        this.log?.debug({ role: options.role, attempts: attempt + 1, latencyMs, usage }, 'model-call-end');
        return { message, usage, latencyMs };
      } catch (error) {
        if (signal?.aborted) throw cancelled(signal);
        if (error instanceof BudgetExhausted) throw this.outOfBudget(attempt + 1, `attempt ${attempt + 1} was still waiting`);
        const failure = describeFailure(error, this.endpoint, this.timeoutMs);
        if (!failure.retryable || progress.sawChunk || attempt >= this.maxRetries) {
          throw failure.contextTooLong
            ? new ContextTooLongError(failure.message, failure.status, { cause: error })
            : new ModelError(failure.message, failure.retryable, failure.status, { cause: error });
        }
        const delayMs = failure.retryAfterMs ?? this.backoffMs(attempt);
        // Waiting past the budget only to fail then helps nobody: give up now.
        if (performance.now() + delayMs >= deadline) throw this.outOfBudget(attempt + 1, failure.message);
        this.log?.warn({ role: options.role, attempt: attempt + 1, status: failure.status, delayMs, error: failure.message }, 'model-call-retry');
        await sleep(delayMs, signal);
      }
    }
  }

  private outOfBudget(attempts: number, last: string): ModelError {
    const seconds = Math.round(this.totalTimeoutMs / 1000);
    return new ModelError(
      `model endpoint ${this.endpoint} gave no answer within ${seconds} s (MODEL_TOTAL_TIMEOUT_SECONDS) over ${attempts} attempt(s); last: ${last}`,
      true,
    );
  }

  private async attempt(request: ModelRequest, options: ModelCallOptions, progress: { sawChunk: boolean }, deadline: number): Promise<Pick<ModelResponse, 'message' | 'usage'>> {
    // One controller per attempt: the caller's abort and our inactivity timer both stop the
    // socket. The SDK's timeout only covers the response headers, not a stalled stream.
    const controller = new AbortController();
    const forwardAbort = () => controller.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', forwardAbort, { once: true });
    let timedOut: 'silence' | 'budget' | undefined;
    let timer: NodeJS.Timeout | undefined;
    let armedForSilence = false;
    // Until the first chunk the call's total budget may be shorter than an attempt's silence;
    // after it, every chunk restarts the same full silence (the timer is refreshed, not remade).
    const armTimer = () => {
      if (armedForSilence) return void timer?.refresh();
      clearTimeout(timer);
      armedForSilence = progress.sawChunk;
      const budgetMs = progress.sawChunk ? Number.POSITIVE_INFINITY : deadline - performance.now();
      const reason = budgetMs < this.timeoutMs ? 'budget' : 'silence';
      timer = setTimeout(() => {
        timedOut = reason;
        controller.abort(new AttemptTimeout());
      }, Math.max(0, Math.min(this.timeoutMs, budgetMs)));
    };
    const accumulator = new MessageAccumulator();
    try {
      armTimer();
      const { data: stream, response } = await this.client.chat.completions.create(
        {
          model: request.model,
          // Sent exactly as given so history (with provider extras) repeats byte for byte.
          messages: request.messages as unknown as ChatCompletionMessageParam[],
          ...(request.tools.length > 0 ? { tools: request.tools as unknown as ChatCompletionTool[] } : {}),
          stream: true,
          stream_options: { include_usage: true },
          prompt_cache_key: request.cacheKey,
          ...outputLimits(request),
        },
        { signal: controller.signal },
      ).withResponse();
      refuseWebPage(response);
      for await (const chunk of stream) {
        if (!progress.sawChunk) options.onResponseStart?.();
        progress.sawChunk = true;
        armTimer();
        accumulator.add(chunk, options.onTextDelta);
      }
      // The SDK ends the iteration silently when the stream is aborted, so a truncated message
      // would otherwise look complete.
      if (timedOut) throw timedOut === 'budget' ? new BudgetExhausted() : new AttemptTimeout();
      if (options.signal?.aborted) throw new Error('aborted');
      if (!accumulator.finished) throw new Error('stream ended before a finish_reason');
      return { message: accumulator.message(), usage: accumulator.usage };
    } catch (error) {
      if (timedOut === 'budget') throw new BudgetExhausted('', { cause: error });
      throw timedOut ? new AttemptTimeout('', { cause: error }) : error;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', forwardAbort);
    }
  }

  private backoffMs(attempt: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt);
    return Math.round(ceiling * (0.5 + Math.random() * 0.5));
  }
}

/** Folds stream chunks into one assistant message. */
class MessageAccumulator {
  private text = '';
  private sawText = false;
  private reasoning: string | undefined;
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  usage: ModelUsage | null = null;
  finished = false;

  add(chunk: ChatCompletionChunk, onTextDelta: ((delta: string) => void) | undefined): void {
    if (chunk.usage) {
      this.usage = {
        promptTokens: chunk.usage.prompt_tokens,
        cachedTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
        completionTokens: chunk.usage.completion_tokens,
      };
    }
    for (const choice of chunk.choices) {
      if (choice.finish_reason) this.finished = true;
      const delta = choice.delta as ChatCompletionChunk.Choice.Delta & { reasoning_content?: unknown; reasoning?: unknown };
      // DeepSeek-style providers send `reasoning_content`; OpenRouter-style ones send `reasoning`.
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') this.reasoning = (this.reasoning ?? '') + reasoning;
      if (typeof delta.content === 'string' && delta.content !== '') {
        this.text += delta.content;
        this.sawText = true;
        onTextDelta?.(delta.content);
      }
      for (const fragment of delta.tool_calls ?? []) {
        const call = this.calls.get(fragment.index) ?? { id: '', name: '', arguments: '' };
        // Some providers repeat the id and name on every fragment; only arguments are split.
        if (fragment.id && !call.id) call.id = fragment.id;
        if (fragment.function?.name && !call.name) call.name = fragment.function.name;
        call.arguments += fragment.function?.arguments ?? '';
        this.calls.set(fragment.index, call);
      }
    }
  }

  message(): ChatMessage {
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, call]) => ({
        id: call.id || `call_${randomUUID()}`,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    return {
      role: 'assistant',
      content: toolCalls.length > 0 && !this.sawText ? null : this.text,
      ...(this.reasoning !== undefined ? { reasoning_content: this.reasoning } : {}),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
  }
}

/** What went wrong, in words that name the endpoint and say what to check. */
function describeFailure(error: unknown, endpoint: string, timeoutMs = 0): Failure {
  if (error instanceof AttemptTimeout) {
    return { message: `model call timed out: ${endpoint} sent nothing for ${Math.round(timeoutMs / 1000)} s (MODEL_TIMEOUT_SECONDS)`, retryable: true };
  }
  if (error instanceof OpenAI.APIConnectionError) {
    const code = networkCode(error);
    return {
      message: `cannot reach the model endpoint ${endpoint}${code ? ` (${code})` : ''}: check OPENAI_BASE_URL and that the server is running`,
      retryable: true,
    };
  }
  if (error instanceof WebPageAnswer) return { message: `model endpoint ${endpoint} answered ${error.message}`, retryable: false };
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    const status = error.status;
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const retryAfterMs = retryAfterFrom(error.headers);
    const contextTooLong = status === 400 && isContextTooLong(error);
    return {
      message: `model endpoint ${endpoint} answered ${errorDetail(error)}${hintFor(status, endpoint)}`, retryable, status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), ...(contextTooLong ? { contextTooLong } : {}),
    };
  }
  // Error events inside the stream, sockets cut mid-body ("terminated") and the like: transient.
  return { message: `model call to ${endpoint} failed: ${error instanceof Error ? error.message : String(error)}`, retryable: true };
}

/**
 * A request's answer cap and reasoning effort on the wire. OpenAI's reasoning models (o-series,
 * GPT-5) take `max_completion_tokens` and `reasoning_effort`; other OpenAI-compatible servers take
 * `max_tokens` and get no effort (an unknown field may be refused, and some servers render the
 * effort into the system prompt, which would break the forks' shared cache, R1).
 */
function outputLimits(request: ModelRequest): { max_tokens?: number; max_completion_tokens?: number; reasoning_effort?: 'minimal' | 'low' } {
  const name = request.model.toLowerCase().replace(/^openai\//, '');
  const reasoning = /^(o\d|gpt-5)/.test(name) && !name.includes('chat');
  const limits: { max_tokens?: number; max_completion_tokens?: number; reasoning_effort?: 'minimal' | 'low' } = {};
  if (request.maxOutputTokens !== undefined) {
    if (reasoning) limits.max_completion_tokens = request.maxOutputTokens;
    else limits.max_tokens = request.maxOutputTokens;
  }
  if (request.minimalReasoning && reasoning) limits.reasoning_effort = name.startsWith('gpt-5') ? 'minimal' : 'low';
  return limits;
}

/**
 * The status and the API's own words, on one line; a body that is not the API's JSON (a proxy's
 * or web server's error page) is named, not quoted whole: it would end up in the chat.
 */
function errorDetail(error: InstanceType<typeof OpenAI.APIError>): string {
  const text = error.message.replace(/^\d{3}\s+/, '').trim();
  if (error.error === undefined && text.startsWith('<')) return `${error.status} a web page instead of the API's JSON (is OPENAI_BASE_URL an API endpoint?)`;
  const line = text.split('\n')[0] ?? '';
  return `${error.status} ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`;
}

/**
 * OpenAI says `code: context_length_exceeded`; compatible servers (vLLM, llama.cpp, Ollama) often
 * send no code, only words like "maximum context length" or "exceeds the context window".
 */
function isContextTooLong(error: InstanceType<typeof OpenAI.APIError>): boolean {
  if (error.code === 'context_length_exceeded') return true;
  return /maximum context length|context[ _]length[ _]exceeded|exceeds? (the )?(model's )?context (window|length)/i.test(error.message);
}

/** What the operator should check for a status, when there is something to say. */
function hintFor(status: number, endpoint: string): string {
  if (status === 401 || status === 403) return ': check OPENAI_API_KEY';
  if (status === 404) {
    // Most OpenAI-compatible servers serve under /v1; a base URL without it gets 404 for everything.
    return /\/v1(\/|$)/.test(endpoint)
      ? ': check MODEL and OPENAI_BASE_URL'
      : ': OPENAI_BASE_URL probably needs /v1 at the end (e.g. http://localhost:11434/v1)';
  }
  return '';
}

/** Why a connection failed: the system error code under it (ECONNREFUSED, ENOTFOUND, …), else the innermost message. */
function networkCode(error: Error): string | undefined {
  let innermost: string | undefined;
  for (let cause: unknown = error.cause, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (cause instanceof Error && cause.message) innermost = cause.message;
  }
  return innermost;
}

function retryAfterFrom(headers: Headers | undefined): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  const header = headers?.get('retry-after') ?? '';
  const seconds = Number.parseFloat(header);
  const candidate = !Number.isNaN(milliseconds) ? milliseconds
    : !Number.isNaN(seconds) ? seconds * 1000
    : header ? Date.parse(header) - Date.now() : Number.NaN;
  return candidate >= 0 && candidate <= maxRetryAfterMs ? candidate : undefined;
}

function cancelled(signal: AbortSignal): CancelledError {
  const reason: unknown = signal.reason;
  return new CancelledError(typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : String(reason));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
