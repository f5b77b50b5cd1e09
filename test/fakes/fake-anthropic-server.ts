// A fake Anthropic Messages API speaking the real wire protocol (node:http, real SSE events:
// message_start, content_block_start/delta/stop, message_delta with usage, message_stop; errors
// as the API sends them), so tests point the real `@anthropic-ai/sdk` client at it. It checks
// requests as the API does (fake-anthropic-prompt.ts) and reports cache reads and writes from a
// prefix cache that honours only `cache_control` marks. Replies are scripted like the OpenAI fake
// (fake-model-server.ts): a queue, then a handler that sees the request as Chat Completions
// messages, then a default reply.
import { anthropicImageRefusal, type ImageRefusalRule } from './fake-image-checks.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeldResponses, listenFake, readBody, RequestWaiters, sendJson, split } from './fake-http.js';
import { argumentsText, type FakeModelServer, type FakeReply, type FakeReplyHandler, type FakeUsage, type RecordedRequest, type WaitOptions } from './fake-model-server.js';
import { chatView, FakePromptCache, invalidRequest, promptTokensOf, type AnthropicRequestBody, type CacheOutcome } from './fake-anthropic-prompt.js';

/** A reply, with what only this API has. */
export interface AnthropicFakeReply extends FakeReply {
  /** The error's `type` in the body (default from the status: 429 rate_limit_error, 529 overloaded_error, …). */
  errorType?: string;
  /** Sent as the `x-should-retry` header with an error status. */
  shouldRetry?: boolean;
  /** An `error` event sent after message_start (the API reports overload this way mid-stream). */
  streamError?: { type: string; message: string };
  /** Explicit usage: cache writes reported as `cache_creation_input_tokens`. */
  usage?: (FakeUsage & { cacheWriteTokens?: number }) | null;
}

/** One request, with the body as sent and the cache's view of it. */
export interface AnthropicRecordedRequest extends RecordedRequest {
  /** The Messages API body as sent (`body` is its Chat Completions view). */
  wire: AnthropicRequestBody;
  /** What the simulated cache read and wrote (absent for requests refused before the model). */
  cache?: CacheOutcome;
}

export interface FakeAnthropicServerOptions {
  /** Requests without this key (`x-api-key` or `Authorization: Bearer`) get the API's 401 (default: any key). */
  apiKey?: string;
  /** Smallest prefix the cache stores, in the fake's tokens (Anthropic: 1,024 for Sonnet and Opus 4; default 0). */
  minCacheTokens?: number;
  /** How long a cache entry lives after its last write or read, in ms (default 5 minutes, as the API's). */
  cacheTtlMs?: number;
  /** When set, longer prompts get the API's 400 `prompt is too long`, in the fake's tokens. */
  contextWindow?: number;
  defaultReply?: AnthropicFakeReply;
  /** Characters per streamed text or JSON delta (default 8). */
  chunkSize?: number;
  /** R22: images this returns true for are refused with the API's "Could not process image" (besides its size, pixel and type checks). */
  refuseImage?: ImageRefusalRule;
}

/** The fake; `url` is the SDK's base URL (no `/v1`: the SDK adds it). */
export interface FakeAnthropicServer extends Omit<FakeModelServer, 'requests' | 'refused' | 'imageRefused' | 'setContextWindow' | 'enqueue' | 'requestsWhere' | 'waitForRequests' | 'waitFor'> {
  readonly requests: readonly AnthropicRecordedRequest[];
  /** Requests refused for an image (R22), in arrival order. */
  readonly imageRefused: readonly AnthropicRecordedRequest[];
  enqueue(...replies: AnthropicFakeReply[]): void;
  requestsWhere(predicate: (request: AnthropicRecordedRequest) => boolean): AnthropicRecordedRequest[];
  waitForRequests(count: number, options?: WaitOptions): Promise<AnthropicRecordedRequest[]>;
  waitFor(predicate: (request: AnthropicRecordedRequest) => boolean, options?: WaitOptions): Promise<AnthropicRecordedRequest>;
}

const errorTypes: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error',
};

/** Starts the fake on 127.0.0.1 on a random port. */
export async function startFakeAnthropicServer(options: FakeAnthropicServerOptions = {}): Promise<FakeAnthropicServer> {
  const requests: AnthropicRecordedRequest[] = [];
  const imageRefused: AnthropicRecordedRequest[] = [];
  let modelListings = 0;
  const queue: AnthropicFakeReply[] = [];
  let handler: FakeReplyHandler | undefined;
  const cache = new FakePromptCache(options.minCacheTokens ?? 0, options.cacheTtlMs === undefined ? {} : { ttlMs: options.cacheTtlMs });
  const waiters = new RequestWaiters('fake Anthropic server', () => requests.length);
  const held = new HeldResponses();
  const waitOrClose = (res: ServerResponse, ms?: number) => held.hold(res, ms);
  const chunkSize = options.chunkSize ?? 8;
  let ids = 0;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const path = (req.url ?? '').split('?')[0] ?? '';
    // The API takes the key as `x-api-key` or, as the SDK sends it since API version 2026-10-21, a bearer token.
    const key = String(req.headers['x-api-key'] ?? /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
    const authorized = options.apiKey === undefined || key === options.apiKey;
    if (req.method === 'GET' && path === '/v1/models') {
      modelListings += 1;
      if (!authorized) return sendError(res, 401, 'invalid x-api-key');
      const model = { type: 'model', id: 'claude-fake-4-5', display_name: 'Claude Fake', created_at: '2026-01-01T00:00:00Z' };
      return sendJson(res, 200, { data: [model], has_more: false, first_id: model.id, last_id: model.id });
    }
    let wire: AnthropicRequestBody;
    try {
      wire = JSON.parse(rawBody || '{}') as AnthropicRequestBody;
    } catch {
      wire = {};
    }
    const request: AnthropicRecordedRequest = { index: requests.length, method: req.method ?? 'GET', path, body: chatView(wire), wire, rawBody, headers: req.headers, receivedAt: Date.now() };
    requests.push(request);
    res.on('close', () => {
      request.respondedAt ??= Date.now();
    });
    waiters.wake();

    if (!authorized) return sendError(res, 401, 'invalid x-api-key');
    if (req.method !== 'POST' || path !== '/v1/messages') return sendError(res, 404, `Not found: ${path}`);
    if (!req.headers['anthropic-version']) return sendError(res, 400, 'anthropic-version: header is required');
    const invalid = invalidRequest(wire);
    if (invalid) return sendError(res, 400, invalid);
    const imageRefusal = await anthropicImageRefusal(wire, options.refuseImage);
    if (imageRefusal) {
      imageRefused.push(request);
      return sendError(res, 400, imageRefusal);
    }
    if (options.contextWindow !== undefined) {
      const tokens = promptTokensOf(wire);
      if (tokens > options.contextWindow) return sendError(res, 400, `prompt is too long: ${tokens} tokens > ${options.contextWindow} maximum`);
    }

    const reply: AnthropicFakeReply = queue.shift() ?? (await handler?.(request.body, { index: request.index, request })) ?? options.defaultReply ?? { content: 'ok' };
    if (reply.delayMs) await waitOrClose(res, reply.delayMs);
    if (res.destroyed) return;
    if (reply.hang) return waitOrClose(res);
    if (reply.status !== undefined && reply.status >= 400) {
      const headers: Record<string, string> = {};
      if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
      if (reply.shouldRetry !== undefined) headers['x-should-retry'] = String(reply.shouldRetry);
      return sendError(res, reply.status, reply.errorMessage ?? `fake error ${reply.status}`, headers, reply.errorType);
    }
    // Hippo always streams; the fake answers nothing else.
    if (!wire.stream) return sendError(res, 400, 'this fake answers streamed requests only (stream: true)');
    const lookup = cache.lookup(key, wire);
    request.cache = lookup.outcome;
    const events = answerEvents(wire, reply, usageOf(reply, lookup.outcome), `msg_fake_${++ids}`, chunkSize);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_fake_${ids}` });
    for (const [sent, event] of events.entries()) {
      if (res.destroyed) return;
      if (sent === reply.hangAfterChunks) return waitOrClose(res);
      if (sent === reply.dropAfterChunks) return void res.destroy();
      await write(res, event);
      // The answer has started: the prompt has been read, and its marked prefixes are cached.
      if (event.type === 'message_start') {
        lookup.commit();
        if (reply.streamError) return void res.end(sse('error', { type: 'error', error: reply.streamError }));
      }
      if (reply.chunkDelayMs) await waitOrClose(res, reply.chunkDelayMs);
    }
    if (!res.destroyed) res.end();
  }

  const http = await listenFake(serve, (res, error) => sendError(res, 500, `fake server failure: ${String(error)}`));
  return {
    url: `http://127.0.0.1:${http.port}`,
    requests,
    imageRefused,
    get modelListings() {
      return modelListings;
    },
    respond: (next) => void (handler = next),
    enqueue: (...replies) => void queue.push(...replies),
    requestsWhere: (predicate) => requests.filter(predicate),
    waitForRequests: (count, wait = {}) => waiters.until(() => (requests.length >= count ? [...requests] : undefined), wait.timeoutMs ?? 5000, `${count} requests`),
    waitFor: (predicate, wait = {}) => waiters.until(() => requests.find(predicate), wait.timeoutMs ?? 5000, 'a matching request'),
    reset: () => {
      requests.length = 0;
      imageRefused.length = 0;
      queue.length = 0;
      handler = undefined;
      cache.clear();
    },
    close: async () => {
      held.releaseAll();
      await http.close();
    },
  };
}

interface WireUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** Reported usage: the reply's when scripted, else the cache's outcome (input = neither read nor written). */
function usageOf(reply: AnthropicFakeReply, outcome: CacheOutcome): WireUsage {
  const output = Math.ceil(((reply.content ?? '').length + (reply.toolCalls ?? []).reduce((sum, call) => sum + call.name.length + argumentsText(call).length, 0)) / 4);
  if (reply.usage === null) return { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
  if (reply.usage) {
    const written = reply.usage.cacheWriteTokens ?? 0;
    return { input_tokens: reply.usage.promptTokens - reply.usage.cachedTokens - written, cache_creation_input_tokens: written, cache_read_input_tokens: reply.usage.cachedTokens, output_tokens: reply.usage.completionTokens };
  }
  return { input_tokens: outcome.promptTokens - outcome.read - outcome.written, cache_creation_input_tokens: outcome.written, cache_read_input_tokens: outcome.read, output_tokens: output };
}

type WireEvent = { type: string; [field: string]: unknown };

/** The events of one answer: text first, then each tool call with its input in JSON deltas. */
function answerEvents(body: AnthropicRequestBody, reply: AnthropicFakeReply, usage: WireUsage, id: string, chunkSize: number): WireEvent[] {
  const calls = reply.toolCalls ?? [];
  const stopReason = reply.finishReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
  const events: WireEvent[] = [
    { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) } } },
    { type: 'ping' },
  ];
  let index = 0;
  if (reply.content !== undefined && reply.content !== '') {
    events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const piece of split(reply.content, chunkSize)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
    events.push({ type: 'content_block_stop', index });
    index += 1;
  }
  for (const [position, call] of calls.entries()) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id ?? `toolu_fake_${id}_${position}`, name: call.name, input: {} } });
    for (const piece of split(argumentsText(call), chunkSize)) events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
    events.push({ type: 'content_block_stop', index });
    index += 1;
  }
  events.push({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage });
  events.push({ type: 'message_stop' });
  return events;
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function write(res: ServerResponse, event: WireEvent): Promise<void> {
  // Waiting for the flush keeps a later destroy from discarding events already "sent".
  return new Promise((resolve) => res.write(sse(event.type, event), () => resolve()));
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, type?: string): void {
  const body = { type: 'error', error: { type: type ?? errorTypes[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message }, request_id: 'req_fake_error' };
  sendJson(res, status, body, { 'request-id': 'req_fake_error', ...headers });
}
