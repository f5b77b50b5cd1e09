// The HTTP of the API clients we are given a `fetch` for (the OpenAI and Anthropic SDKs, Slack's Web
// API client): a `fetch` over undici's `request`, the HTTP/1.1 client Node's own fetch runs on,
// without the WHATWG Request machinery around each call (abort-signal plumbing, header validation,
// body cloning). A streamed model call costs about 0.4 ms less CPU this way, a tenth of a turn's
// whole cost in the agent; a Slack call, read whole without a web stream, about 0.4 ms less, half
// its cost (docs/benchmarks.md, B3 and B4). Anything but a plain text body (an upload, a stream) goes to
// Node's fetch as before. Every answer is capped, so a broken or hostile endpoint (or a proxy in
// front of it) cannot fill the heap.
import { STATUS_CODES } from 'node:http';
import { pipeline } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
// First: Node's own global dispatcher, so that loading undici below takes over nothing.
import './node-dispatcher.js';
import { Agent, EnvHttpProxyAgent, request, type Dispatcher } from 'undici';

/** Keep-alive connections to the API endpoints, as Node's global fetch keeps them: direct, or through a proxy. */
let direct: Dispatcher | undefined;
let viaProxy: Dispatcher | undefined;

/** What an API client's fetch is told (config.ts: NODE_USE_ENV_PROXY). */
export interface ApiFetchOptions {
  /** Whose answers these are, for the errors (default "model response"). */
  name?: string;
  /** Through the environment's HTTP_PROXY / HTTPS_PROXY, except NO_PROXY, as Node's fetch does when asked. */
  proxyFromEnvironment?: boolean;
  /** Most bytes one response body may decode to (default `maxResponseBytes`). */
  maxResponseBytes?: number;
}

/**
 * Most bytes one response body may decode to: far above any answer (a full window of output is
 * a few MB of SSE), far below what hurts the process. A body past it (a decompression bomb, an
 * endless line from a broken proxy) fails its call instead of filling the heap.
 */
export const maxResponseBytes = 32 * 1024 * 1024;

/**
 * Most bytes one server-sent event may have (a model's events are a delta each, a few hundred
 * bytes). The SDKs buffer an event until its blank line and rescan it with every chunk, so time
 * grows with the square of its length: an 8 MiB event cost 10 s of CPU, 1 MiB costs 0.1 s.
 */
export const maxEventBytes = 1024 * 1024;

/** The `fetch` an API client is given (the model SDKs read their answers as streams). */
export function createApiFetch(options: ApiFetchOptions = {}): typeof fetch {
  const caps = capsOf(options);
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    if (input instanceof Request || !isText(init.body)) return fetch(input, init);
    const { answer, headers, status } = await open(String(input), init, caps);
    const responseHeaders = new Headers();
    for (const [name, value] of headers) responseHeaders.append(name, value);
    if (!answer) return new Response(null, { status, headers: responseHeaders });
    const eventStream = responseHeaders.get('content-type')?.toLowerCase().includes('text/event-stream') ?? false;
    const read = capped(answer, caps.name, caps.limit, eventStream ? maxEventBytes : null);
    // Node's Response reads an async iterable body (undici's extractBody); the DOM types omit it.
    return new Response(read as unknown as ConstructorParameters<typeof Response>[0], { status, headers: responseHeaders });
  }) as typeof fetch;
}

/** An answer read whole, as a client that never streams reads it (Slack's Web API client). */
export interface WholeAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly headers: { get(name: string): string | null; entries(): IterableIterator<[string, string]> };
  arrayBuffer(): Promise<ArrayBuffer>;
  json(): Promise<unknown>;
  text(): Promise<string>;
}

/** What a whole-answer fetch is asked (the request side of fetch, as Slack's client calls it). */
export interface WholeRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | FormData;
  redirect?: 'error' | 'follow' | 'manual';
  signal?: AbortSignal;
}

/**
 * The same requests and caps for a client that reads each answer whole (Slack's Web API client):
 * the body is read into one buffer and handed over as it is, without the WHATWG Response and the
 * web stream it builds around every body (a third of a Slack call's CPU in B4's profile).
 */
export function createWholeAnswerFetch(options: ApiFetchOptions = {}): (input: string | URL, init?: WholeRequest) => Promise<WholeAnswer> {
  const caps = capsOf(options);
  return async (input, init = {}) => {
    if (!isText(init.body)) return fetch(input, init as RequestInit);
    const { answer, headers, status } = await open(String(input), init as RequestInit, caps);
    const chunks: Uint8Array[] = [];
    if (answer) for await (const chunk of capped(answer, caps.name, caps.limit, null)) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    const text = () => bytes.toString('utf8');
    return {
      ok: status >= 200 && status < 300,
      status,
      statusText: STATUS_CODES[status] ?? '',
      url: String(input),
      headers: {
        get: (name) => {
          const wanted = name.toLowerCase();
          const values = headers.filter(([each]) => each === wanted).map(([, value]) => value);
          return values.length ? values.join(', ') : null;
        },
        entries: () => headers[Symbol.iterator](),
      },
      arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      json: async () => JSON.parse(text()) as unknown,
      text: async () => text(),
    };
  };
}

/** A created fetch's settings: whose answers (for errors), their cap, and the connections used. */
interface Caps {
  name: string;
  limit: number;
  proxyFromEnvironment: boolean;
}

function capsOf(options: ApiFetchOptions): Caps {
  return { name: options.name ?? 'model response', limit: options.maxResponseBytes ?? maxResponseBytes, proxyFromEnvironment: options.proxyFromEnvironment ?? false };
}

/** A body this module sends itself; anything else (an upload, a stream) goes to Node's fetch. */
function isText(body: unknown): body is string | null | undefined {
  return body === undefined || body === null || typeof body === 'string';
}

/** Decoders for the encodings a server may use even unasked (no Accept-Encoding is sent). */
const decoders: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * How long an idle connection is kept for the next call (ms): under the idle timeout of common
 * servers and proxies (Node's http server and uvicorn close after 5 s), so the server rarely closes
 * a connection just as we send on it. A server's own `Keep-Alive: timeout=` hint, when shorter, wins.
 */
export const idleConnectionMs = 4_000;

/**
 * Errors of a connection the server closed before answering: on a kept-alive connection this is
 * the race of its idle timeout with our request, which the server never read.
 */
const closedConnection = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * Sends the request; returns the status, the headers (lower-case names; a decoded body loses its
 * encoding and length) and the body decoded, or null when the answer has none.
 */
async function open(url: string, init: RequestInit, caps: Caps): Promise<{ status: number; headers: Array<[string, string]>; answer: AsyncIterable<Uint8Array> | null }> {
  const dispatcher = caps.proxyFromEnvironment
    ? (viaProxy ??= new EnvHttpProxyAgent({ keepAliveTimeout: idleConnectionMs }))
    : (direct ??= new Agent({ keepAliveTimeout: idleConnectionMs }));
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, header) => {
    headers[header] = value;
  });
  const method = (init.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod;
  const send = () => request(url, { method, headers, body: (init.body as string | null | undefined) ?? null, signal: init.signal ?? undefined, dispatcher });
  // A connection closed under us before any answer is tried once more, on a new connection and
  // without a warning: the caller's own retries (and their backoff and log line) are for failures
  // of the service, not for a kept-alive socket that timed out (the body is text: it can be resent).
  const answer = await send().catch((error: unknown) => {
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
    if (!closedConnection.has(code) || init.signal?.aborted) throw error;
    return send();
  });
  const status = answer.statusCode;
  const received: Array<[string, string]> = [];
  for (const [header, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) received.push([header.toLowerCase(), each]);
  }
  if (init.redirect === 'error' && status >= 300 && status < 400 && received.some(([header]) => header === 'location')) {
    // As Node's fetch does when told so (Slack's client is): a redirect fails the call.
    answer.body.resume();
    throw new TypeError(`fetch failed: ${caps.name} redirected (HTTP ${status}) and redirects are refused`);
  }
  if (status === 204 || status === 304 || method === 'HEAD') {
    answer.body.resume();
    return { status, headers: received, answer: null };
  }
  const encoding = received.find(([header]) => header === 'content-encoding')?.[1].trim().toLowerCase();
  const decoder = encoding ? decoders[encoding] : undefined;
  if (!decoder) return { status, headers: received, answer: answer.body };
  // Decoded, the body no longer has the encoding or the length the server sent.
  const kept = received.filter(([header]) => header !== 'content-encoding' && header !== 'content-length');
  return { status, headers: kept, answer: pipeline(answer.body, decoder(), () => undefined) as unknown as AsyncIterable<Uint8Array> };
}

/**
 * The body, failing once it has decoded to more than `limit` bytes, or (an event stream) once one
 * event runs past `eventLimit` bytes without its blank line; the rest is not read.
 */
async function* capped(body: AsyncIterable<Uint8Array>, name: string, limit: number, eventLimit: number | null): AsyncIterable<Uint8Array> {
  let total = 0;
  const event = { bytes: 0, last: [0, 0, 0] };
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > limit) throw new Error(`${name}: more than ${limit} bytes (decoded); the rest was not read`);
    if (eventLimit !== null && eventBytes(event, chunk) > eventLimit) throw new Error(`${name}: an event of more than ${eventLimit} bytes; the rest was not read`);
    yield chunk;
  }
}

const lf = 0x0a;
const cr = 0x0d;

/** Bytes of the event still open after `chunk` (an event ends with \n\n, \r\r or \r\n\r\n). */
function eventBytes(event: { bytes: number; last: number[] }, chunk: Uint8Array): number {
  let [third = 0, second = 0, first = 0] = event.last;
  let bytes = event.bytes;
  for (let index = 0; index < chunk.length; index += 1) {
    const byte = chunk[index] ?? 0;
    const ends = (byte === lf && (first === lf || (first === cr && second === lf && third === cr))) || (byte === cr && first === cr);
    bytes = ends ? 0 : bytes + 1;
    third = second;
    second = first;
    first = byte;
  }
  event.bytes = bytes;
  event.last = [third, second, first];
  return bytes;
}
