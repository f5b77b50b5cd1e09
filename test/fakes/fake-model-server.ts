// A fake OpenAI-compatible Chat Completions server speaking the real wire protocol (node:http,
// real SSE), so tests can point the real `openai` client (or anything else) at it. Replies are
// scripted per request: a queue first, then a handler, then a default reply.
import { openAIImageRefusal, type ImageRefusalRule } from './fake-image-checks.js';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { HeldResponses, listenFake, readBody, RequestWaiters, sendJson, split } from './fake-http.js';

/** A tool call the fake model makes; `arguments` objects are sent as JSON text. */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

/** Usage the fake reports, in tokens. */
export interface FakeUsage {
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

/** What the fake model answers to one request. Every field is optional. */
export interface FakeReply {
  content?: string;
  toolCalls?: FakeToolCall[];
  /** Streamed as `delta.reasoning_content` (DeepSeek-style), before the content. */
  reasoningContent?: string;
  /** Reported usage; `null` reports none; absent estimates it (see `estimateUsage`). */
  usage?: FakeUsage | null;
  /** Wait before sending anything, in milliseconds. */
  delayMs?: number;
  /** Wait between streamed chunks, in milliseconds (default 0). */
  chunkDelayMs?: number;
  /** HTTP error status (e.g. 429, 500); the body is an OpenAI-style error object. */
  status?: number;
  /** Error message in the error body (default `fake error <status>`). */
  errorMessage?: string;
  /** Sent as the `retry-after` header, in seconds. */
  retryAfter?: number;
  /** Sent as the `retry-after-ms` header, in milliseconds. */
  retryAfterMs?: number;
  /** Never answer: the request stays open until the client disconnects or the server closes. */
  hang?: true;
  /** Streaming only: after this many chunks, stop sending but keep the connection open. */
  hangAfterChunks?: number;
  /** Streaming only: after this many chunks, destroy the connection (a mid-stream failure). */
  dropAfterChunks?: number;
  /** Defaults to `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
}

/** The parsed Chat Completions request body (only the fields the fake looks at are typed). */
export interface FakeRequestBody {
  model?: string;
  messages: Array<Record<string, unknown>>;
  tools?: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  prompt_cache_key?: string;
  [field: string]: unknown;
}

/** One request the server received. Times are `Date.now()` milliseconds. */
export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  body: FakeRequestBody;
  rawBody: string;
  headers: IncomingHttpHeaders;
  receivedAt: number;
  respondedAt?: number;
}

/** Decides the reply from the whole request; `undefined` falls through to the default reply. */
export type FakeReplyHandler = (
  body: FakeRequestBody,
  context: { index: number; request: RecordedRequest },
) => FakeReply | undefined | Promise<FakeReply | undefined>;

/** Options of `startFakeModelServer`. */
export interface FakeModelServerOptions {
  /** Report cached tokens from a per-`prompt_cache_key` prefix cache (default false). */
  simulateCache?: boolean;
  /** Reply when neither the queue nor the handler gives one (default `{ content: 'ok' }`). */
  defaultReply?: FakeReply;
  /** Characters per streamed content/argument chunk (default 8). */
  chunkSize?: number;
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401 (default: any key). */
  apiKey?: string;
  /**
   * The model's window in the fake's tokens (see `promptTokensOf`): a longer prompt gets OpenAI's
   * 400 `context_length_exceeded`, and estimated usage counts the tools too (as real prompts do).
   * Changeable later with `setContextWindow`.
   */
  contextWindow?: number;
  /** R22: images this returns true for are refused as OpenAI refuses one it cannot read (besides those that do not decode). */
  refuseImage?: ImageRefusalRule;
  /**
   * Keep each recorded request's body once it is answered (default true). The benchmarks send
   * tens of thousands of requests and only count them: without the bodies the fake's heap, and the
   * CPU its collector spends beside the measured agent, stay small.
   */
  keepBodies?: boolean;
}

/** Options for the wait helpers; `timeoutMs` defaults to 5,000. */
export interface WaitOptions {
  timeoutMs?: number;
}

/** A running fake server; see `startFakeModelServer`. */
export interface FakeModelServer {
  /** Base URL ending in `/v1`, for `new OpenAI({ baseURL })`. */
  readonly url: string;
  /** Every request received, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** How many times the model list (GET /v1/models) was asked for; those are not in `requests`. */
  readonly modelListings: number;
  /** Sets the handler consulted when the queue is empty. */
  respond(handler: FakeReplyHandler): void;
  /** Queues replies consumed one per request, before the handler. */
  enqueue(...replies: FakeReply[]): void;
  /** The recorded requests matching `predicate`. */
  requestsWhere(predicate: (request: RecordedRequest) => boolean): RecordedRequest[];
  /** Resolves with the requests once at least `count` have arrived. */
  waitForRequests(count: number, options?: WaitOptions): Promise<RecordedRequest[]>;
  /** Resolves with the first request (already received or future) matching `predicate`. */
  waitFor(predicate: (request: RecordedRequest) => boolean, options?: WaitOptions): Promise<RecordedRequest>;
  /** Sets (or clears) the window above which requests are refused as too long. */
  setContextWindow(tokens: number | undefined): void;
  /** Requests refused as longer than the window, in arrival order. */
  readonly refused: readonly RecordedRequest[];
  /** Requests refused for an image (R22), in arrival order. */
  readonly imageRefused: readonly RecordedRequest[];
  /** Forgets requests, queue, handler and the simulated cache. */
  reset(): void;
  /** Releases hanging requests, destroys connections and stops listening. */
  close(): Promise<void>;
}

/** OpenAI caches nothing under 1,024 prompt tokens, then whole 128-token blocks. */
export function cachedTokensFor(sharedPrefixTokens: number): number {
  if (sharedPrefixTokens < 1024) return 0;
  return Math.floor(sharedPrefixTokens / 128) * 128;
}

/** Estimated usage: prompt = ceil(JSON(messages).length / 4), completion = ceil(output length / 4). */
export function estimateUsage(body: FakeRequestBody, reply: FakeReply): FakeUsage {
  const output = [
    reply.content ?? '',
    reply.reasoningContent ?? '',
    ...(reply.toolCalls ?? []).map((call) => call.name + argumentsText(call)),
  ].join('');
  return {
    promptTokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4),
    cachedTokens: 0,
    completionTokens: Math.ceil(output.length / 4),
  };
}

/** The prompt as a window counts it: ceil((JSON(messages) + JSON(tools)).length / 4). */
export function promptTokensOf(body: FakeRequestBody): number {
  const tools = body.tools && body.tools.length > 0 ? JSON.stringify(body.tools).length : 0;
  return Math.ceil((JSON.stringify(body.messages ?? []).length + tools) / 4);
}

/** Text of the last message of a request (string content, or the text parts joined). */
export function lastMessageText(body: FakeRequestBody): string {
  const content = body.messages.at(-1)?.['content'];
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('');
}

/** Starts a fake model server on 127.0.0.1 on a random port. */
export async function startFakeModelServer(options: FakeModelServerOptions = {}): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = [];
  let modelListings = 0;
  const queue: FakeReply[] = [];
  let handler: FakeReplyHandler | undefined;
  // Per cache key: serialized messages of earlier answered requests, with their tools.
  let cache = new Map<string, Array<{ tools: string; messages: string }>>();
  const waiters = new RequestWaiters('fake model server', () => requests.length);
  const held = new HeldResponses();
  const waitOrClose = (res: ServerResponse, ms?: number) => held.hold(res, ms);
  const chunkSize = options.chunkSize ?? 8;
  let chunkCounter = 0;
  let contextWindow = options.contextWindow;
  const refused: RecordedRequest[] = [];
  const imageRefused: RecordedRequest[] = [];

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const path = (req.url ?? '').split('?')[0] ?? '';
    const authorized = options.apiKey === undefined || req.headers.authorization === `Bearer ${options.apiKey}`;
    // The model list (Hippo looks at it once at start-up) is answered but not recorded: `requests`
    // holds the Chat Completions traffic tests reason about.
    if (req.method === 'GET' && path === '/v1/models') {
      modelListings += 1;
      if (!authorized) return sendError(res, 401, 'Incorrect API key provided');
      return sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] });
    }
    let body: FakeRequestBody;
    try {
      body = JSON.parse(rawBody || '{}') as FakeRequestBody;
    } catch {
      body = { messages: [] };
    }
    const request: RecordedRequest = {
      index: requests.length,
      method: req.method ?? 'GET',
      path,
      body,
      rawBody,
      headers: req.headers,
      receivedAt: Date.now(),
    };
    requests.push(request);
    // `res` 'close' fires when the response ends or the client goes away, whichever comes first.
    res.on('close', () => {
      request.respondedAt ??= Date.now();
    });
    waiters.wake();

    if (!authorized) return sendError(res, 401, 'Incorrect API key provided');
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return sendError(res, 404, `no route ${path}`);
    if (!Array.isArray(body.messages)) return sendError(res, 400, 'messages must be an array');
    const unpaired = toolPairingError(body.messages);
    if (unpaired) return sendJson(res, 400, { error: { ...unpaired, type: 'invalid_request_error', code: null } });
    if (contextWindow !== undefined) {
      const tokens = promptTokensOf(body);
      if (tokens > contextWindow) {
        // OpenAI's wording and code, before any reply is consumed.
        refused.push(request);
        const message = `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`;
        return sendError(res, 400, message, {}, 'context_length_exceeded');
      }
    }

    const imageRefusal = await openAIImageRefusal(body, options.refuseImage);
    if (imageRefusal) {
      imageRefused.push(request);
      return sendError(res, 400, imageRefusal, {}, 'invalid_image_format');
    }
    const reply = queue.shift() ?? (await handler?.(body, { index: request.index, request })) ?? options.defaultReply ?? { content: 'ok' };
    if (options.keepBodies === false) {
      request.body = { messages: [] };
      request.rawBody = '';
    }
    if (reply.delayMs) await waitOrClose(res, reply.delayMs);
    if (res.destroyed) return;
    if (reply.hang) return waitOrClose(res);
    if (reply.status !== undefined && reply.status >= 400) {
      const headers: Record<string, string> = {};
      if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
      if (reply.retryAfterMs !== undefined) headers['retry-after-ms'] = String(reply.retryAfterMs);
      return sendError(res, reply.status, reply.errorMessage ?? `fake error ${reply.status}`, headers);
    }

    const cachedTokens = simulateCache(body);
    const estimated = { ...estimateUsage(body, reply), cachedTokens, ...(contextWindow !== undefined ? { promptTokens: promptTokensOf(body) } : {}) };
    const usage = reply.usage === undefined ? estimated : reply.usage;
    const id = `chatcmpl-fake-${request.index}`;
    if (body.stream) await stream(res, body, reply, usage, id);
    else sendJson(res, 200, completion(body, reply, usage, id));
  }

  // Cached tokens = longest shared message prefix with an earlier request of the same key and the
  // same tools (tools come first in the real prompt, so different tools share nothing).
  function simulateCache(body: FakeRequestBody): number {
    if (!options.simulateCache) return 0;
    const key = body.prompt_cache_key ?? '';
    const tools = JSON.stringify(body.tools ?? []);
    const messages = JSON.stringify(body.messages);
    const earlier = cache.get(key) ?? [];
    let shared = 0;
    for (const entry of earlier) if (entry.tools === tools) shared = Math.max(shared, commonPrefixLength(entry.messages, messages));
    earlier.push({ tools, messages });
    cache.set(key, earlier);
    return cachedTokensFor(Math.floor(shared / 4));
  }

  async function stream(res: ServerResponse, body: FakeRequestBody, reply: FakeReply, usage: FakeUsage | null, id: string): Promise<void> {
    const includeUsage = body.stream_options?.include_usage === true;
    const base = { id, object: 'chat.completion.chunk', created: nowSeconds(), model: body.model ?? 'fake-model', system_fingerprint: 'fp_fake' };
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });
    const chunks: object[] = [];
    const toolCalls = reply.toolCalls ?? [];
    const firstText = reply.content === undefined && toolCalls.length > 0 ? null : '';
    chunks.push(chunk({ role: 'assistant', content: firstText, refusal: null }));
    for (const piece of split(reply.reasoningContent ?? '', chunkSize)) chunks.push(chunk({ reasoning_content: piece }));
    for (const piece of split(reply.content ?? '', chunkSize)) chunks.push(chunk({ content: piece }));
    toolCalls.forEach((call, index) => {
      const head = { index, id: call.id ?? `call_fake_${index}_${++chunkCounter}`, type: 'function', function: { name: call.name, arguments: '' } };
      chunks.push(chunk({ tool_calls: [head] }));
      for (const piece of split(argumentsText(call), chunkSize)) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    chunks.push(chunk({}, finishReasonOf(reply)));
    if (includeUsage && usage) chunks.push({ ...base, choices: [], usage: usageJson(usage) });

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': id });
    for (const [sent, data] of chunks.entries()) {
      if (res.destroyed) return;
      if (sent === reply.hangAfterChunks) return waitOrClose(res);
      if (sent === reply.dropAfterChunks) return void res.destroy();
      // Waiting for the flush keeps a later destroy from discarding chunks already "sent".
      await new Promise<void>((resolve) => res.write(`data: ${JSON.stringify(data)}\n\n`, () => resolve()));
      if (reply.chunkDelayMs) await waitOrClose(res, reply.chunkDelayMs);
    }
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  }

  const http = await listenFake(serve, (res, error) => sendError(res, 500, `fake server failure: ${String(error)}`));

  return {
    url: `http://127.0.0.1:${http.port}/v1`,
    requests,
    get modelListings() {
      return modelListings;
    },
    respond: (next) => void (handler = next),
    setContextWindow: (tokens) => void (contextWindow = tokens),
    refused,
    imageRefused,
    enqueue: (...replies) => void queue.push(...replies),
    requestsWhere: (predicate) => requests.filter(predicate),
    waitForRequests: (count, wait = {}) =>
      waiters.until(() => (requests.length >= count ? [...requests] : undefined), wait.timeoutMs ?? 5000, `${count} requests`),
    waitFor: (predicate, wait = {}) => waiters.until(() => requests.find(predicate), wait.timeoutMs ?? 5000, 'a matching request'),
    reset: () => {
      requests.length = 0;
      imageRefused.length = 0;
      refused.length = 0;
      queue.length = 0;
      handler = undefined;
      cache = new Map();
    },
    close: async () => {
      held.releaseAll();
      await http.close();
    },
  };
}

function completion(body: FakeRequestBody, reply: FakeReply, usage: FakeUsage | null, id: string): object {
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_fake_${index}`,
    type: 'function',
    function: { name: call.name, arguments: argumentsText(call) },
  }));
  const content = reply.content ?? (toolCalls.length > 0 ? null : '');
  const message = {
    role: 'assistant',
    content,
    refusal: null,
    ...(reply.reasoningContent !== undefined ? { reasoning_content: reply.reasoningContent } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  return {
    id,
    object: 'chat.completion',
    created: nowSeconds(),
    model: body.model ?? 'fake-model',
    system_fingerprint: 'fp_fake',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(reply) }],
    ...(usage ? { usage: usageJson(usage) } : {}),
  };
}

function usageJson(usage: FakeUsage): object {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
  };
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, code: string | null = null): void {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: code === null ? null : 'messages', code } }, headers);
}

export function argumentsText(call: FakeToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

function finishReasonOf(reply: FakeReply): string {
  return reply.finishReason ?? ((reply.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop');
}

function commonPrefixLength(left: string, right: string): number {
  const limit = Math.min(left.length, right.length);
  let length = 0;
  while (length < limit && left.charCodeAt(length) === right.charCodeAt(length)) length++;
  return length;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * The 400 OpenAI answers when tool calls and tool messages do not pair up, in its words, or null:
 * an assistant message's `tool_calls` must be followed at once by one `tool` message per id, and
 * every `tool` message must answer a call of the assistant message right before its group.
 */
export function toolPairingError(messages: ReadonlyArray<Record<string, unknown>>): { message: string; param: string } | null {
  // The open assistant message: its index and the ids not answered yet.
  let open: { index: number; pending: Set<string> } | null = null;
  const unanswered = (at: { index: number; pending: Set<string> }) => ({
    message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...at.pending].join(', ')}`,
    param: `messages.[${at.index}].role`,
  });
  for (const [index, message] of messages.entries()) {
    if (message['role'] === 'tool') {
      if (!open) return { message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: `messages.[${index}].role` };
      const id = String(message['tool_call_id'] ?? '');
      if (!open.pending.delete(id)) return { message: `Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`, param: `messages.[${index}].tool_call_id` };
      continue;
    }
    if (open && open.pending.size > 0) return unanswered(open);
    const calls = message['role'] === 'assistant' && Array.isArray(message['tool_calls']) ? (message['tool_calls'] as Array<{ id?: unknown }>) : [];
    open = calls.length > 0 ? { index, pending: new Set(calls.map((call) => String(call.id ?? ''))) } : null;
  }
  return open && open.pending.size > 0 ? unanswered(open) : null;
}
