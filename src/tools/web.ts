// The `web` tool group: web_fetch reads a URL as text. Redirects are followed by hand so each
// hop is vetted (web-address.ts), and the socket connects to the vetted address so a second DNS
// answer cannot swap in a private one (DNS rebinding). Pages are hostile input: the bytes read
// from the socket and the bytes after decompression are capped separately (compression bombs),
// one deadline covers the fetch and the conversion, and the conversion itself is linear and
// bounded (html-to-text.ts).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { pipeline, Transform, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import { defineTool, type AnyTool } from '../core/tool.js';
import { convertHtml, DEFAULT_CONVERT_BUDGET_MS } from './html-to-text.js';
import { abortReason } from './abort-reason.js';
import { resultBudgetChars } from '../core/output-cap.js';
import { vetUrl, type Resolver, type VettedTarget } from './web-address.js';

/** Options of the web tool group. */
export interface WebToolsOptions {
  /** Allow loopback, private and link-local addresses (WEB_FETCH_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Most bytes of one response body after decompression (default 2 MiB). */
  maxBytes?: number;
  /** Most bytes read from the socket for one compressed response body (default 2 MiB). */
  maxWireBytes?: number;
  /** Time limit for one fetch including redirects and the conversion to text, in milliseconds (default 20,000). */
  timeoutMs?: number;
  /** Most time the HTML conversion may take within that limit, in milliseconds (default 2,000). */
  convertBudgetMs?: number;
  /** Host name resolver (default: the system's, via node:dns). */
  resolve?: Resolver;
}

/** Default response size cap in bytes (after decompression). */
export const DEFAULT_MAX_BYTES = 2 * 1024 * 1024;

/** Default cap on the bytes read from the socket per compressed response. */
export const DEFAULT_MAX_WIRE_BYTES = 2 * 1024 * 1024;

/** Most characters of a header value (URL, type, status text) shown to the model. */
const MAX_HEADER_CHARS = 2_000;

/** Default fetch time limit in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 20_000;

/** Most redirects followed before giving up. */
export const MAX_REDIRECTS = 5;

/** Settings of one fetchPage call. */
export interface FetchPageOptions {
  /** Checks a URL (each hop) and returns the address to connect to; throws to refuse. */
  vet: (url: URL) => Promise<VettedTarget>;
  /** Most body bytes after decompression. */
  maxBytes: number;
  /** Most body bytes read from the socket when the body is compressed (default: maxBytes). */
  maxWireBytes?: number;
  signal: AbortSignal;
}

/** A fetched response: the final URL after redirects, status, type and (possibly cut) body. */
export interface FetchedPage {
  url: string;
  redirects: string[];
  status: number;
  statusText: string;
  contentType: string;
  body: Buffer;
  /** Set when the body was cut: at the decompressed or the wire limit. */
  truncated: false | 'decompressed' | 'wire';
}

/** Builds the web_fetch tool. */
export function webTools(options: WebToolsOptions): AnyTool[] {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const maxWireBytes = options.maxWireBytes ?? DEFAULT_MAX_WIRE_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const convertBudgetMs = options.convertBudgetMs ?? DEFAULT_CONVERT_BUDGET_MS;
  const vet = (url: URL): Promise<VettedTarget> =>
    vetUrl(url, options.resolve ? { allowPrivate: options.allowPrivate, resolve: options.resolve } : { allowPrivate: options.allowPrivate });

  const webFetch = defineTool({
    name: 'web_fetch',
    // A hostile page may be what crashed the process: never fetched again after a crash.
    untrustedOutput: true,
    description:
      'Fetch a web page (http or https) and return it as readable text; HTML is converted to Markdown-like text with links. Long pages are cut; pass start_char to read on.',
    input: z.object({
      url: z.string().min(1).describe('Absolute http(s) URL'),
      start_char: z.number().int().min(0).optional().describe('Character offset into the page text to continue from (default 0)'),
    }),
    // Our own timer fires first and reports a readable timeout; this only backs it up.
    timeoutMs: timeoutMs + 5_000,
    async execute(input, context) {
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw new ToolError(`"${input.url}" is not an absolute URL`);
      }
      // One deadline for fetching and converting.
      const deadline = performance.now() + timeoutMs;
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([timeout, context.signal]);
      let page: FetchedPage;
      try {
        page = await fetchPage(url, { vet, maxBytes, maxWireBytes, signal });
      } catch (error) {
        if (context.signal.aborted) throw new CancelledError(abortReason(context.signal));
        if (timeout.aborted) throw new ToolError(`fetching ${url.href} timed out after ${timeoutMs / 1000} s`);
        throw error;
      }
      // Whatever the download left of the deadline, at most the conversion budget; an exhausted
      // budget still converts the first slice of the page (and says the rest is missing).
      const convertDeadline = Math.min(deadline, performance.now() + convertBudgetMs);
      return formatPage(page, { maxBytes, maxWireBytes, startChar: input.start_char ?? 0, budget: resultBudgetChars(context.contextWindow), deadline: convertDeadline });
    },
  });
  return [webFetch];
}

/** GETs `url`, following up to MAX_REDIRECTS redirects and vetting every hop before connecting. */
export async function fetchPage(url: URL, options: FetchPageOptions): Promise<FetchedPage> {
  const redirects: string[] = [];
  let current = url;
  for (;;) {
    const target = await options.vet(current);
    const response = await requestOnce(current, target, options);
    const location = response.headers.location;
    if ([301, 302, 303, 307, 308].includes(response.statusCode ?? 0) && location !== undefined) {
      response.destroy();
      if (redirects.length >= MAX_REDIRECTS) throw new ToolError(`too many redirects (more than ${MAX_REDIRECTS}) starting at ${url.href}`);
      redirects.push(current.href);
      try {
        current = new URL(location, current);
      } catch {
        throw new ToolError(`${current.href} redirects to an invalid URL: ${location}`);
      }
      continue;
    }
    const { body, truncated } = await readBody(response, options.maxBytes, options.maxWireBytes ?? options.maxBytes);
    return {
      url: current.href,
      redirects,
      status: response.statusCode ?? 0,
      statusText: response.statusMessage ?? '',
      contentType: response.headers['content-type'] ?? '',
      body,
      truncated,
    };
  }
}

function requestOnce(url: URL, target: VettedTarget, options: FetchPageOptions): Promise<http.IncomingMessage> {
  // Answer every lookup with the vetted addresses; Host and SNI still come from the URL. Node
  // asks for all of them when it races IPv6 and IPv4 (autoSelectFamily).
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    const [first] = target.addresses;
    if (lookupOptions.all) callback(null, target.addresses);
    else callback(null, first.address, first.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(url, {
      method: 'GET',
      headers: {
        'user-agent': 'Hippo/0.1 (web_fetch)',
        accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5',
        'accept-encoding': 'gzip, deflate, br',
      },
      lookup,
      // A fresh socket per hop: a pooled one may be connected to another host's address.
      agent: false,
      signal: options.signal,
    });
    request.once('response', resolve);
    // `on`, not `once`: a socket can fail more than once, and an unheard 'error' crashes the process.
    request.on('error', (error) => reject(new ToolError(`could not fetch ${url.href}: ${error.message}`, { cause: error })));
    request.end();
  });
}

/**
 * Reads (and decompresses) the body until `maxBytes` decompressed or `maxWireBytes` read from the
 * socket, then stops the download.
 */
async function readBody(response: http.IncomingMessage, maxBytes: number, maxWireBytes: number): Promise<{ body: Buffer; truncated: FetchedPage['truncated'] }> {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decompressor =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  // The wire cap counts what the server sends, so a stream that decompresses to little (or
  // nothing) cannot keep us reading until the deadline.
  let wireBytes = 0;
  // An object, so the narrowing of `cut.truncated` survives the callbacks that set it.
  const cut: { truncated: FetchedPage['truncated'] } = { truncated: false };
  const wire = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (cut.truncated === 'wire') {
        callback();
        return;
      }
      const room = maxWireBytes - wireBytes;
      wireBytes += chunk.length;
      if (chunk.length <= room) {
        callback(null, chunk);
        return;
      }
      cut.truncated = 'wire';
      response.unpipe(this);
      this.push(chunk.subarray(0, room));
      // End here: the decompressor flushes what it has; the socket is closed below.
      this.push(null);
      callback();
    },
  });
  // pipeline (unlike pipe) passes a failed or aborted download on to the decompressor.
  // Without compression the bytes received are the body, and maxBytes caps them.
  const stream: Readable = decompressor ? pipeline(response, wire, decompressor, () => undefined) : response;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      // The cap applies after decompression, so a small compressed bomb is cut too.
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        size = maxBytes;
        cut.truncated = 'decompressed';
        break;
      }
      chunks.push(buffer);
      size += buffer.length;
    }
  } catch (error) {
    // A cut compressed stream ends mid-way; what was decompressed until then is kept.
    if (cut.truncated === 'wire') return { body: Buffer.concat(chunks), truncated: cut.truncated };
    throw new ToolError(`reading the response failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    response.destroy();
  }
  return { body: Buffer.concat(chunks), truncated: cut.truncated };
}

/** Settings of formatPage. */
interface FormatOptions {
  maxBytes: number;
  maxWireBytes: number;
  startChar: number;
  /** Most characters of page text shown. */
  budget: number;
  /** When the conversion must stop (performance.now() clock). */
  deadline: number;
}

/** Renders a fetched page for the model: a short header, then the text from `startChar`. */
function formatPage(page: FetchedPage, options: FormatOptions): string {
  const kind = contentKind(page.contentType, page.body);
  if (kind === 'binary') {
    throw new ToolError(`${shorten(page.url)} is binary content (${shorten(page.contentType) || 'unknown type'}); only text and HTML can be fetched`);
  }
  const raw = decodeBody(page.body, page.contentType);
  const converted = kind === 'html' ? convertHtml(raw, { baseUrl: page.url, maxChars: options.maxBytes, deadline: options.deadline }) : { text: raw };
  const text = converted.text;
  const header = [`URL: ${shorten(page.url)}`];
  if (page.redirects.length > 0) header.push(`Redirected from: ${shorten(page.redirects[0] ?? '')}`);
  header.push(shorten(`Status: ${page.status} ${page.statusText}`.trimEnd()));
  if (page.contentType !== '') header.push(`Content-Type: ${shorten(page.contentType)}`);
  if ('title' in converted && converted.title !== undefined) header.push(`Title: ${shorten(converted.title)}`);
  if (page.truncated === 'decompressed') header.push(`Note: the download stopped at the ${options.maxBytes}-byte limit; the end of the page is missing.`);
  if (page.truncated === 'wire') header.push(`Note: the download stopped after ${options.maxWireBytes} bytes were received; the end of the page is missing.`);
  if ('stopped' in converted && converted.stopped === 'size') header.push(`Note: the page text was cut at ${options.maxBytes} characters.`);
  if ('stopped' in converted && converted.stopped === 'time') header.push('Note: converting the page to text ran out of time; the end of the page is missing.');
  const startChar = options.startChar;
  if (startChar > 0 && startChar >= text.length) {
    throw new ToolError(`start_char ${startChar} is past the end of the page text (${text.length} characters)`);
  }
  const end = Math.min(text.length, startChar + options.budget);
  let shown = text.slice(startChar, end);
  if (startChar > 0) shown = `[… continuing at character ${startChar} of ${text.length}]\n${shown}`;
  if (end < text.length) shown += `\n[… page text cut: showed characters ${startChar}–${end} of ${text.length}. Call web_fetch again with start_char=${end} to read on.]`;
  return `${header.join('\n')}\n\n${shown === '' ? '(empty body)' : shown}`;
}

/** A header value from the server, cut to MAX_HEADER_CHARS. */
function shorten(value: string): string {
  return value.length <= MAX_HEADER_CHARS ? value : `${value.slice(0, MAX_HEADER_CHARS)}…`;
}

/** Classifies a response as HTML, other text, or binary (by type, then by content). */
function contentKind(contentType: string, body: Buffer): 'html' | 'text' | 'binary' {
  const mime = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (mime.startsWith('text/') || /^application\/(json|xml|javascript|ecmascript|x-javascript|yaml|x-yaml|toml|x-sh|sql|graphql|x-ndjson|x-www-form-urlencoded)$/.test(mime) || /\+(json|xml)$/.test(mime)) {
    return 'text';
  }
  if (mime !== '' && mime !== 'application/octet-stream') return 'binary';
  // No useful type: decide by content, as browsers sniff.
  const head = body.subarray(0, 1024);
  if (head.includes(0)) return 'binary';
  return /^\s*<(!doctype html|html|head|body)\b/i.test(head.toString('latin1')) ? 'html' : 'text';
}

/** Decodes with the declared charset (header, else HTML meta), falling back to UTF-8. */
function decodeBody(body: Buffer, contentType: string): string {
  const declared =
    /charset\s*=\s*["']?([^;"'\s]+)/i.exec(contentType)?.[1] ??
    /<meta[^>]+charset\s*=\s*["']?([^;"'\s/>]+)/i.exec(body.subarray(0, 2048).toString('latin1'))?.[1];
  try {
    return new TextDecoder(declared ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}
