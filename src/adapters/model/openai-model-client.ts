// ModelClient over an OpenAI-compatible Chat Completions endpoint, streamed. Retries are ours (the
// SDK's are off) so that a call is retried only before any chunk arrived: once text has streamed
// to the user, a retry would show it twice.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { ContextTooLongError, ImageRefusedError, ModelError } from '../../core/errors.js';
import type { ChatMessage, ToolCall } from '../../core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, ModelUsage } from '../../core/model-client.js';
import { createApiFetch } from '../http/api-fetch.js';
import { AttemptTimeout, completeWithRetries, retryPolicy, networkCode, retryAfterFrom, type AttemptControl, type Failure, type ModelClientLog, type RetryPolicy } from './retrying-call.js';

/** Options of `OpenAIModelClient`: the endpoint, and any part of its retry policy. */
export interface OpenAIModelClientOptions extends Partial<RetryPolicy> {
  /** Sent as the bearer token. */
  apiKey: string;
  /** Endpoint base URL including `/v1` (default: the OpenAI API). */
  baseURL?: string;
  /** Receives `model-call-retry` (warn) and `model-call-end` (debug). */
  log?: ModelClientLog;
  /** Send through the environment's HTTP(S)_PROXY / NO_PROXY (NODE_USE_ENV_PROXY=1). */
  proxyFromEnvironment?: boolean;
}

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
  readonly policy: RetryPolicy;
  readonly log: ModelClientLog | undefined;

  constructor(options: OpenAIModelClientOptions) {
    this.policy = retryPolicy(options);
    this.log = options.log;
    // Everything explicit: the SDK would otherwise read OPENAI_* variables itself (config is ours).
    this.client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0, timeout: this.policy.timeoutMs, logLevel: 'off', fetch: createApiFetch({ proxyFromEnvironment: options.proxyFromEnvironment ?? false }) });
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
    const body = {
      model: request.model,
      // Sent exactly as given so history (with provider extras) repeats byte for byte.
      messages: request.messages as unknown as ChatCompletionMessageParam[],
      ...(request.tools.length > 0 ? { tools: request.tools as unknown as ChatCompletionTool[] } : {}),
      stream: true as const,
      stream_options: { include_usage: true },
      prompt_cache_key: request.cacheKey,
      ...outputLimits(request),
    };
    return completeWithRetries(this, options, {
      attempt: (control) => this.attempt(body, options, control),
      describe: (error) => describeFailure(error, this.endpoint, this.policy.timeoutMs),
      toError: (failure, cause) => failure.contextTooLong
        ? new ContextTooLongError(failure.message, failure.status, { cause })
        // OpenAI does not say which image it refused: every image the request shows is suspect.
        : failure.imageRefused
          ? new ImageRefusedError(failure.message, [], failure.status, { cause })
          : new ModelError(failure.message, failure.retryable, failure.status, { cause }),
    });
  }

  private async attempt(body: ChatCompletionCreateParamsStreaming, options: ModelCallOptions, control: AttemptControl): Promise<Pick<ModelResponse, 'message' | 'usage'>> {
    const { data: stream, response } = await this.client.chat.completions.create(body, { signal: control.signal }).withResponse();
    refuseWebPage(response);
    const accumulator = new MessageAccumulator();
    let started = false;
    for await (const chunk of stream) {
      if (!started) options.onResponseStart?.();
      started = true;
      control.progressed();
      // Once any chunk arrived the call is not repeated: what streamed may already be on screen.
      control.commit();
      accumulator.add(chunk, options.onTextDelta);
    }
    // The SDK ends the iteration quietly when the stream is aborted: a cut answer must not pass.
    if (!accumulator.finished) throw new Error('stream ended before a finish_reason');
    return { message: accumulator.message(), usage: accumulator.usage };
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
    const imageRefused = status === 400 && !contextTooLong && isImageRefused(error);
    return {
      message: `model endpoint ${endpoint} answered ${errorDetail(error)}${hintFor(status, endpoint)}`, retryable, status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), ...(contextTooLong ? { contextTooLong } : {}), ...(imageRefused ? { imageRefused } : {}),
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

/**
 * R22: OpenAI refuses an image it cannot read with a 400 "You uploaded an unsupported image. Please
 * make sure your image is valid." (code `invalid_image_format`; "Invalid image." and
 * `image_parse_error` for others); compatible servers say "invalid image", "cannot identify image
 * file" (vLLM, through PIL) or "failed to load image" (llama.cpp).
 */
function isImageRefused(error: InstanceType<typeof OpenAI.APIError>): boolean {
  if (typeof error.code === 'string' && /^(invalid_image(_format|_url)?|image_parse_error|image_too_large)$/.test(error.code)) return true;
  return /unsupported image|invalid image|cannot identify image|failed to (load|decode) image|image (is )?too large/i.test(error.message);
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
