// The model clients' HTTP: a `fetch` for the OpenAI and Anthropic SDKs over undici's `request`, the
// HTTP/1.1 client Node's own fetch runs on, without the WHATWG Request machinery around each call
// (abort-signal plumbing, header validation, body cloning). A streamed call costs about 0.4 ms less
// CPU this way, which is a tenth of a turn's whole cost in the agent (docs/benchmarks.md, B3).
// Anything but a plain text body (an upload, a stream) goes to Node's fetch as before.
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, EnvHttpProxyAgent, request, type Dispatcher } from 'undici';

/** Keep-alive connections to the model endpoints, as Node's global fetch keeps them: direct, or through a proxy. */
let direct: Dispatcher | undefined;
let viaProxy: Dispatcher | undefined;

/** What a model client's fetch is told (config.ts: NODE_USE_ENV_PROXY). */
export interface ModelFetchOptions {
  /** Through the environment's HTTP_PROXY / HTTPS_PROXY, except NO_PROXY, as Node's fetch does when asked. */
  proxyFromEnvironment?: boolean;
}

/** The `fetch` a model SDK is given. */
export function createModelFetch(options: ModelFetchOptions = {}): typeof fetch {
  const connections = () => options.proxyFromEnvironment
    ? (viaProxy ??= new EnvHttpProxyAgent({ keepAliveTimeout: 30_000 }))
    : (direct ??= new Agent({ keepAliveTimeout: 30_000 }));
  return ((input: string | URL | Request, init?: RequestInit) => send(input, init ?? {}, connections())) as typeof fetch;
}

/** Decoders for the encodings a server may use even unasked (no Accept-Encoding is sent). */
const decoders: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

async function send(input: string | URL | Request, init: RequestInit, dispatcher: Dispatcher): Promise<Response> {
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
  if (answer.statusCode === 204 || answer.statusCode === 304 || method === 'HEAD') {
    answer.body.resume();
    return new Response(null, { status: answer.statusCode, headers: responseHeaders });
  }
  // Node's Response reads an async iterable body (undici's extractBody); the DOM types omit it.
  return new Response(decoded(answer.body, responseHeaders) as unknown as ConstructorParameters<typeof Response>[0], { status: answer.statusCode, headers: responseHeaders });
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
