// ModelClient over Anthropic's Messages API (MODEL_PROVIDER=anthropic), streamed, with prompt-cache
// breakpoints (anthropic-messages.ts): Anthropic caches only up to marked blocks, which its
// OpenAI-compatible endpoint cannot express, so there every fork would re-read the worker's
// context at full price. Retries are ours (the SDK's are off), as in openai-model-client.ts.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsStreaming, MessageParam, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { ContextTooLongError, ImageRefusedError, ModelError } from '../../core/errors.js';
import type { ChatMessage, ToolCall } from '../../core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, ModelUsage } from '../../core/model-client.js';
import { toAnthropicPrompt } from './anthropic-messages.js';
import { createApiFetch } from '../http/api-fetch.js';
import type { EndpointCheck } from './openai-model-client.js';
import { AttemptTimeout, completeWithRetries, retryPolicy, networkCode, retryAfterFrom, type AttemptControl, type Failure, type ModelClientLog, type RetryPolicy } from './retrying-call.js';

/** Options of `AnthropicModelClient`: the endpoint, the output cap, and any part of its retry policy. */
export interface AnthropicModelClientOptions extends Partial<RetryPolicy> {
  /** Sent as `x-api-key` (ANTHROPIC_API_KEY). */
  apiKey: string;
  /** API base URL without `/v1` (default https://api.anthropic.com; ANTHROPIC_BASE_URL). */
  baseURL?: string;
  /** `max_tokens` of every call, which the API requires (default: `defaultMaxOutputTokens(model)`). */
  maxOutputTokens?: number;
  /** Receives `model-call-retry` (warn) and `model-call-end` (debug). */
  log?: ModelClientLog;
  /** Send through the environment's HTTP(S)_PROXY / NO_PROXY (NODE_USE_ENV_PROXY=1). */
  proxyFromEnvironment?: boolean;
}

/** A failure, and whether the API refused the prompt as longer than the model's window. */
interface AnthropicFailure extends Failure {
  contextTooLong?: boolean;
}

/**
 * `max_tokens` when none is configured: 16,384 (an answer or a memory document is far shorter, and
 * the window keeps room for it: the API refuses prompt + max_tokens over the window), or less for
 * Claude 3 models, whose outputs are capped lower.
 */
export function defaultMaxOutputTokens(model: string): number {
  const name = model.toLowerCase();
  if (/claude-3-(haiku|opus|sonnet)/.test(name)) return 4_096;
  if (/claude-3[-.]5/.test(name)) return 8_192;
  return 16_384;
}

/** Calls the Anthropic Messages API with streaming, retrying transient failures. */
export class AnthropicModelClient implements ModelClient {
  private readonly client: Anthropic;
  readonly policy: RetryPolicy;
  private readonly maxOutputTokens: number | undefined;
  readonly log: ModelClientLog | undefined;

  constructor(options: AnthropicModelClientOptions) {
    this.policy = retryPolicy(options);
    this.maxOutputTokens = options.maxOutputTokens;
    this.log = options.log;
    // Everything explicit: the SDK would otherwise read ANTHROPIC_* variables itself (config is ours).
    this.client = new Anthropic({
      apiKey: options.apiKey,
      baseURL: options.baseURL ?? 'https://api.anthropic.com',
      webhookKey: null,
      maxRetries: 0,
      timeout: this.policy.timeoutMs,
      logLevel: 'off',
      fetch: createApiFetch({ proxyFromEnvironment: options.proxyFromEnvironment ?? false }),
    });
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

  /** Lists one model (GET /v1/models) to see whether the API answers and takes the key. */
  async checkEndpoint(timeoutMs = 10_000): Promise<EndpointCheck> {
    try {
      await this.client.models.list({ limit: 1 }, { timeout: timeoutMs, maxRetries: 0 });
      return { status: 'ok', detail: `model endpoint ${this.endpoint} answers` };
    } catch (error) {
      const failure = describeFailure(error, this.endpoint);
      const status = failure.status === 401 || failure.status === 403 ? 'unauthorized' : 'unreachable';
      return { status, detail: failure.message };
    }
  }

  /** True when `error` (a ModelError this client threw) means the API could not be reached. */
  isUnreachable(error: ModelError): boolean {
    return error.cause instanceof Anthropic.APIConnectionError;
  }

  /** Streams one answer and returns the aggregated assistant message. */
  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    // `request.cacheKey` has no counterpart here: the API caches by exact prefix, per organization.
    // Only a summarizer's instruction is read again (by its next step); a decider answers at once.
    const prompt = toAnthropicPrompt(request.messages, request.tools, { markLast: options.role === 'summarizer' });
    const body: MessageCreateParamsStreaming = {
      model: request.model,
      max_tokens: Math.min(this.maxOutputTokens ?? defaultMaxOutputTokens(request.model), request.maxOutputTokens ?? Number.POSITIVE_INFINITY),
      ...(prompt.system ? { system: prompt.system } : {}),
      messages: prompt.messages,
      ...(prompt.tools.length > 0 ? { tools: prompt.tools } : {}),
      stream: true,
    };
    return completeWithRetries(this, options, {
      attempt: (control) => this.attempt(body, options, control),
      describe: (error) => describeFailure(error, this.endpoint, this.policy.timeoutMs),
      toError: (failure, cause) => modelErrorOf(failure, cause, prompt.messages),
    });
  }

  private async attempt(body: MessageCreateParamsStreaming, options: ModelCallOptions, control: AttemptControl): Promise<Pick<ModelResponse, 'message' | 'usage'>> {
    const stream = await this.client.messages.create(body, { signal: control.signal });
    const accumulator = new AnswerAccumulator();
    let started = false;
    for await (const event of stream) {
      if (!started) options.onResponseStart?.();
      started = true;
      control.progressed();
      accumulator.add(event, (delta) => {
        // Text the user saw is never sent twice: a failure after it is final.
        control.commit();
        options.onTextDelta?.(delta);
      });
    }
    // The SDK ends the iteration quietly when the stream is aborted: a cut answer must not pass.
    if (!accumulator.finished) throw new Error('stream ended before message_stop');
    return { message: accumulator.message(), usage: accumulator.usage };
  }
}

/**
 * The error a final failure becomes. The one place that knows the API refused the prompt as too
 * long for the model's window ("prompt is too long"): a 400, never retried as it is. Core's
 * reset-and-retry on a too-long call (R19) connects here.
 */
function modelErrorOf(failure: AnthropicFailure, cause: unknown, sent: readonly MessageParam[]): ModelError {
  if (failure.contextTooLong) return new ContextTooLongError(failure.message, failure.status, { cause });
  if (failure.imageRefused) {
    const apiMessage = cause instanceof Anthropic.APIError ? cause.apiMessage ?? '' : '';
    const named = refusedImageUrl(apiMessage, sent);
    return new ImageRefusedError(failure.message, named ? [named] : [], failure.status, { cause });
  }
  return new ModelError(failure.message, failure.retryable, failure.status, { cause });
}

/** Folds stream events into one assistant message and its usage. */
class AnswerAccumulator {
  private text = '';
  private readonly calls = new Map<number, { id: string; name: string; json: string; input: unknown }>();
  private counts = { input: 0, written: 0, read: 0, output: 0 };
  private sawUsage = false;
  finished = false;

  add(event: RawMessageStreamEvent, onText: (delta: string) => void): void {
    switch (event.type) {
      case 'message_start':
        this.addUsage(event.message.usage);
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          const block = event.content_block;
          this.calls.set(event.index, { id: block.id, name: block.name, json: '', input: block.input });
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta' && event.delta.text !== '') {
          this.text += event.delta.text;
          onText(event.delta.text);
        } else if (event.delta.type === 'input_json_delta') {
          const call = this.calls.get(event.index);
          if (call) call.json += event.delta.partial_json;
        }
        break;
      case 'message_delta':
        this.addUsage(event.usage);
        break;
      case 'message_stop':
        this.finished = true;
        break;
      default:
        break;
    }
  }

  // message_start carries the prompt's counts; message_delta the output so far (and, from newer
  // API versions, the prompt's counts again): the latest non-null value of each wins.
  private addUsage(usage: { input_tokens?: number | null; cache_creation_input_tokens?: number | null; cache_read_input_tokens?: number | null; output_tokens?: number | null }): void {
    this.sawUsage = true;
    this.counts = {
      input: usage.input_tokens ?? this.counts.input,
      written: usage.cache_creation_input_tokens ?? this.counts.written,
      read: usage.cache_read_input_tokens ?? this.counts.read,
      output: usage.output_tokens ?? this.counts.output,
    };
  }

  /** Prompt tokens are all of them: plain input, written to the cache and read from it. */
  get usage(): ModelUsage | null {
    if (!this.sawUsage) return null;
    const { input, written, read, output } = this.counts;
    return { promptTokens: input + written + read, cachedTokens: read, completionTokens: output, cacheWriteTokens: written };
  }

  message(): ChatMessage {
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, call]) => ({
        id: call.id || `toolu_${randomUUID().replaceAll('-', '')}`,
        type: 'function',
        function: { name: call.name, arguments: call.json !== '' ? call.json : JSON.stringify(call.input ?? {}) },
      }));
    return {
      role: 'assistant',
      content: toolCalls.length > 0 && this.text === '' ? null : this.text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
  }
}

// The API's error types that mean "try again later", for errors sent inside a stream (no status).
const streamErrorStatus: Record<string, number> = { overloaded_error: 529, rate_limit_error: 429, api_error: 500, timeout_error: 504 };

/** What went wrong, in words that name the endpoint and say what to check. */
function describeFailure(error: unknown, endpoint: string, timeoutMs = 0): AnthropicFailure {
  if (error instanceof AttemptTimeout) {
    return { message: `model call timed out: ${endpoint} sent nothing for ${Math.round(timeoutMs / 1000)} s (MODEL_TIMEOUT_SECONDS)`, retryable: true };
  }
  if (error instanceof Anthropic.APIConnectionError) {
    const code = networkCode(error);
    return { message: `cannot reach the model endpoint ${endpoint}${code ? ` (${code})` : ''}: check ANTHROPIC_BASE_URL and that the server is running`, retryable: true };
  }
  if (error instanceof Anthropic.APIError) {
    const detail = errorDetail(error);
    if (error.status === undefined) {
      const status = streamErrorStatus[error.type ?? ''];
      return { message: `model endpoint ${endpoint} failed mid-answer: ${detail}`, retryable: status !== undefined, ...(status !== undefined ? { status } : {}) };
    }
    const status = error.status;
    const shouldRetry = error.headers?.get('x-should-retry');
    const retryable = shouldRetry === 'true' || (shouldRetry !== 'false' && (status === 408 || status === 409 || status === 429 || status >= 500));
    const retryAfterMs = retryAfterFrom(error.headers);
    const contextTooLong = status === 400 && /prompt is too long|exceed context limit/i.test(error.apiMessage ?? '');
    const imageRefused = status === 400 && !contextTooLong && imageRefusal.test(error.apiMessage ?? '');
    return {
      message: `model endpoint ${endpoint} answered ${status} ${detail}${hintFor(status, endpoint, contextTooLong)}`,
      retryable,
      status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      ...(contextTooLong ? { contextTooLong } : {}),
      ...(imageRefused ? { imageRefused } : {}),
    };
  }
  return { message: `model call to ${endpoint} failed: ${error instanceof Error ? error.message : String(error)}`, retryable: true };
}

/**
 * R22: the API's 400s for an image it will not take name the block (`messages.2.content.0.image.
 * source.base64: image exceeds 5 MB maximum: 8259148 bytes > 5242880 bytes`, `…base64.data: At least
 * one of the image dimensions exceed max allowed size: 8000 pixels` or `… for many-image requests:
 * 2000 pixels`, "The image data you provided does not represent a valid image", "Image does not
 * match the provided media type", "Could not process image").
 */
const imageRefusal = /\.image\.source\b|could not process image|does not represent a valid image|does not match the provided media type|image exceeds|image dimensions exceed/i;

/** The data URL of the image block the API's message names (`messages.N.content.M`, or inside a tool result `….content.K`). */
function refusedImageUrl(apiMessage: string, sent: readonly MessageParam[]): string | null {
  const match = /messages\.(\d+)\.content\.(\d+)(?:\.content\.(\d+))?/.exec(apiMessage);
  if (!match) return null;
  const content = sent[Number(match[1])]?.content;
  let block: unknown = typeof content === 'string' ? undefined : content?.[Number(match[2])];
  if (match[3] !== undefined && block && typeof block === 'object' && 'content' in block && Array.isArray(block.content)) block = block.content[Number(match[3])];
  if (!block || typeof block !== 'object' || !('type' in block) || block.type !== 'image' || !('source' in block)) return null;
  const source = block.source as { type?: string; media_type?: string; data?: string };
  return source.type === 'base64' ? `data:${source.media_type ?? ''};base64,${source.data ?? ''}` : null;
}

/** The API's own words (`type: message`); a body that is not the API's JSON is named, not quoted whole. */
function errorDetail(error: InstanceType<typeof Anthropic.APIError>): string {
  if (error.apiMessage !== null) return error.type ? `${error.type}: ${error.apiMessage}` : error.apiMessage;
  const text = error.message.replace(/^\d{3}\s+/, '').trim();
  if (text.startsWith('<')) return 'a web page instead of the API\'s JSON (is the base URL an API endpoint?)';
  const line = text.split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** What the operator should check for a status, when there is something to say. */
function hintFor(status: number, endpoint: string, contextTooLong: boolean): string {
  if (contextTooLong) return ': the context is longer than the model\'s window (MODEL_CONTEXT_WINDOW may be set larger than the model\'s)';
  if (status === 401 || status === 403) return ': check ANTHROPIC_API_KEY';
  if (status === 404) {
    // The SDK adds /v1 itself; a base URL that has it already gets 404 for everything.
    return /\/v1(\/|$)/.test(endpoint) ? ': ANTHROPIC_BASE_URL must not end in /v1 (e.g. https://api.anthropic.com)' : ': check MODEL and ANTHROPIC_BASE_URL';
  }
  if (status === 413) return ': the request is larger than the API accepts (images or tool results)';
  return '';
}
