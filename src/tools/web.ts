// The `web` tool group: web_fetch reads a URL as text. Redirects are followed by hand so each
// hop is vetted (web-address.ts), and the socket connects to the vetted address so a second DNS
// answer cannot swap in a private one (DNS rebinding). Size and time are capped.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import { defineTool, type AnyTool } from '../core/tool.js';
import { htmlTitle, htmlToText } from './html-to-text.js';
import { abortReason } from './abort-reason.js';
import { resultBudgetChars } from '../core/output-cap.js';
import { vetUrl, type Resolver, type VettedTarget } from './web-address.js';

/** Options of the web tool group. */
export interface WebToolsOptions {
  /** Allow loopback, private and link-local addresses (WEB_FETCH_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Most bytes read from one response body (default 2 MiB). */
  maxBytes?: number;
  /** Time limit for one fetch including redirects, in milliseconds (default 20,000). */
  timeoutMs?: number;
  /** Host name resolver (default: the system's, via node:dns). */
  resolve?: Resolver;
}

/** Default response size cap in bytes. */
export const DEFAULT_MAX_BYTES = 2 * 1024 * 1024;

/** Default fetch time limit in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 20_000;

/** Most redirects followed before giving up. */
export const MAX_REDIRECTS = 5;

/** Settings of one fetchPage call. */
export interface FetchPageOptions {
  /** Checks a URL (each hop) and returns the address to connect to; throws to refuse. */
  vet: (url: URL) => Promise<VettedTarget>;
  maxBytes: number;
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
  truncated: boolean;
}

/** Builds the web_fetch tool. */
export function webTools(options: WebToolsOptions): AnyTool[] {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const vet = (url: URL): Promise<VettedTarget> =>
    vetUrl(url, options.resolve ? { allowPrivate: options.allowPrivate, resolve: options.resolve } : { allowPrivate: options.allowPrivate });

  const webFetch = defineTool({
    name: 'web_fetch',
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
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([timeout, context.signal]);
      let page: FetchedPage;
      try {
        page = await fetchPage(url, { vet, maxBytes, signal });
      } catch (error) {
        if (context.signal.aborted) throw new CancelledError(abortReason(context.signal));
        if (timeout.aborted) throw new ToolError(`fetching ${url.href} timed out after ${timeoutMs / 1000} s`);
        throw error;
      }
      return formatPage(page, maxBytes, input.start_char ?? 0, resultBudgetChars(context.contextWindow));
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
    const { body, truncated } = await readBody(response, options.maxBytes);
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

/** Reads (and decompresses) the body until `maxBytes`, then stops the download. */
async function readBody(response: http.IncomingMessage, maxBytes: number): Promise<{ body: Buffer; truncated: boolean }> {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decompressor =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  // pipeline (unlike pipe) passes a failed or aborted download on to the decompressor.
  const stream: Readable = decompressor ? pipeline(response, decompressor, () => undefined) : response;
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of stream) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      // The cap applies after decompression, so a small compressed bomb is cut too.
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(buffer);
      size += buffer.length;
    }
  } catch (error) {
    throw new ToolError(`reading the response failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    response.destroy();
  }
  return { body: Buffer.concat(chunks), truncated };
}

/** Renders a fetched page for the model: a short header, then the text from `startChar`. */
function formatPage(page: FetchedPage, maxBytes: number, startChar: number, budget: number): string {
  const kind = contentKind(page.contentType, page.body);
  if (kind === 'binary') {
    throw new ToolError(`${page.url} is binary content (${page.contentType || 'unknown type'}); only text and HTML can be fetched`);
  }
  const raw = decodeBody(page.body, page.contentType);
  const text = kind === 'html' ? htmlToText(raw, page.url) : raw;
  const header = [`URL: ${page.url}`];
  if (page.redirects.length > 0) header.push(`Redirected from: ${page.redirects[0] ?? ''}`);
  header.push(`Status: ${page.status} ${page.statusText}`.trimEnd());
  if (page.contentType !== '') header.push(`Content-Type: ${page.contentType}`);
  const title = kind === 'html' ? htmlTitle(raw) : undefined;
  if (title !== undefined) header.push(`Title: ${title}`);
  if (page.truncated) header.push(`Note: the download stopped at the ${maxBytes}-byte limit; the end of the page is missing.`);
  if (startChar > 0 && startChar >= text.length) {
    throw new ToolError(`start_char ${startChar} is past the end of the page text (${text.length} characters)`);
  }
  const end = Math.min(text.length, startChar + budget);
  let shown = text.slice(startChar, end);
  if (startChar > 0) shown = `[… continuing at character ${startChar} of ${text.length}]\n${shown}`;
  if (end < text.length) shown += `\n[… page text cut: showed characters ${startChar}–${end} of ${text.length}. Call web_fetch again with start_char=${end} to read on.]`;
  return `${header.join('\n')}\n\n${shown === '' ? '(empty body)' : shown}`;
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
