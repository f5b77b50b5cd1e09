// The HTTP of the API clients we are given a `fetch` for (the OpenAI and Anthropic SDKs, Slack's Web
// API client): a `fetch` over undici's `request`, the HTTP/1.1 client Node's own fetch runs on,
// without the WHATWG Request machinery around each call (abort-signal plumbing, header validation,
// body cloning). A streamed model call costs about 0.4 ms less CPU this way, a tenth of a turn's
// whole cost in the agent, and a Slack call about 0.3 ms less, a tenth of an acked event's
// (docs/benchmarks.md, B3 and B4). Anything but a plain text body (an upload, a stream) goes to
// Node's fetch as before. Every answer is capped, so a broken or hostile endpoint (or a proxy in
// front of it) cannot fill the heap.
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
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

/** The `fetch` an API client is given. */
export function createApiFetch(options: ApiFetchOptions = {}): typeof fetch {
  const connections = () => options.proxyFromEnvironment
    ? (viaProxy ??= new EnvHttpProxyAgent({ keepAliveTimeout: 30_000 }))
    : (direct ??= new Agent({ keepAliveTimeout: 30_000 }));
  const caps = { name: options.name ?? 'model response', limit: options.maxResponseBytes ?? maxResponseBytes };
  return ((input: string | URL | Request, init?: RequestInit) => send(input, init ?? {}, connections(), caps)) as typeof fetch;
}

/** Decoders for the encodings a server may use even unasked (no Accept-Encoding is sent). */
const decoders: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

async function send(input: string | URL | Request, init: RequestInit, dispatcher: Dispatcher, caps: { name: string; limit: number }): Promise<Response> {
  const body = init.body;
  if (input instanceof Request || (body !== undefined && body !== null && typeof body !== 'string')) return fetch(input, init);
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const method = (init.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod;
  const answer = await request(String(input), { method, headers, body: body ?? null, signal: init.signal ?? undefined, dispatcher });
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) responseHeaders.append(name, each);
  }
  if (init.redirect === 'error' && answer.statusCode >= 300 && answer.statusCode < 400 && responseHeaders.has('location')) {
    // As Node's fetch does when told so (Slack's client is): a redirect fails the call.
    answer.body.resume();
    throw new TypeError(`fetch failed: ${caps.name} redirected (HTTP ${answer.statusCode}) and redirects are refused`);
  }
  if (answer.statusCode === 204 || answer.statusCode === 304 || method === 'HEAD') {
    answer.body.resume();
    return new Response(null, { status: answer.statusCode, headers: responseHeaders });
  }
  // Node's Response reads an async iterable body (undici's extractBody); the DOM types omit it.
  const eventStream = responseHeaders.get('content-type')?.toLowerCase().includes('text/event-stream') ?? false;
  const read = capped(decoded(answer.body, responseHeaders), caps.name, caps.limit, eventStream ? maxEventBytes : null);
  return new Response(read as unknown as ConstructorParameters<typeof Response>[0], { status: answer.statusCode, headers: responseHeaders });
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

/** The body as sent, or decoded when the server compressed it (then its length no longer holds). */
function decoded(body: Readable, headers: Headers): AsyncIterable<Uint8Array> {
  const encoding = headers.get('content-encoding')?.trim().toLowerCase();
  const decoder = encoding ? decoders[encoding] : undefined;
  if (!decoder) return body;
  headers.delete('content-encoding');
  headers.delete('content-length');
  return pipeline(body, decoder(), () => undefined) as unknown as AsyncIterable<Uint8Array>;
}
