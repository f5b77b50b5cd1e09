// Hostile pages through the real web_fetch path (a loopback server, allowPrivate for loopback),
// and the bounded converter on its own. Time bounds are generous: they tell seconds from minutes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, constants as zlibConstants, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyTool } from '../../src/core/tool.js';
import { convertHtml, htmlToText } from '../../src/tools/html-to-text.js';
import { webTools, type WebToolsOptions } from '../../src/tools/web.js';
import { toolContext } from '../support/tool-context.js';

const MiB = 1024 * 1024;

/** `unit` repeated to about `bytes` characters. */
const repeat = (unit: string, bytes = 2 * MiB): string => unit.repeat(Math.ceil(bytes / unit.length));

const hostilePages: Record<string, string> = {
  '/nested-ul': repeat('<ul><li>x'),
  '/nested-div': repeat('<div>x'),
  '/unclosed-title': `<html><head>${repeat('<title>')}`,
  '/unclosed-title-body': `${repeat('<title>x', 512 * 1024)}<p>after</p>`,
  '/unclosed-href': repeat('<a href="x>y</a>'),
  '/entities': repeat('&amp;&Eacute;'),
  '/nested-tables': repeat('<table><tr><td>'),
  '/nested-links': `${repeat('<a href="/x">', MiB)}label${repeat('</a>', MiB)}`,
};

/** 1 GiB of zeros as 1,024 concatenated gzip members of 1 MiB each: about 1 MiB on the wire. */
const gzipBomb = Buffer.concat(new Array<Buffer>(1024).fill(gzipSync(Buffer.alloc(MiB))));
const emptyGzipMember = gzipSync(Buffer.alloc(0));
let deflateBomb: Buffer;
let brotliBomb: Buffer;

let server: http.Server;
let base: string;

beforeAll(async () => {
  // Compressed once here, so the timed fetches measure only the client.
  deflateBomb = deflateSync(Buffer.alloc(64 * MiB, '<ul><li>'));
  brotliBomb = brotliCompressSync(Buffer.alloc(64 * MiB), { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } });
  server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    const page = hostilePages[url];
    if (page !== undefined) {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    } else if (url === '/gzip-bomb') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipBomb);
    } else if (url === '/deflate-bomb') {
      response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'deflate' }).end(deflateBomb);
    } else if (url === '/br-bomb') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'br' }).end(brotliBomb);
    } else if (url === '/endless-empty-gzip') {
      // Decompresses to nothing, forever: only a cap on the bytes received ends it.
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      const send = (): void => {
        while (response.write(Buffer.concat(new Array<Buffer>(256).fill(emptyGzipMember)))) {
          if (response.destroyed) return;
        }
        response.once('drain', send);
      };
      send();
    } else if (url === '/big-json') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(`[${repeat('"xxxxxxxxxxxxx",', 8 * MiB)}0]`);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Fetches `path` through the web_fetch tool; returns the result, the time taken and the heap growth. */
async function measuredFetch(path: string, options: Partial<WebToolsOptions> = {}): Promise<{ result: string; ms: number; heapGrowth: number }> {
  const [tool] = webTools({ allowPrivate: true, ...options }) as [AnyTool];
  const heapBefore = process.memoryUsage().heapUsed;
  const started = performance.now();
  const result = await tool.execute(tool.input.parse({ url: `${base}${path}` }), toolContext());
  return { result, ms: performance.now() - started, heapGrowth: process.memoryUsage().heapUsed - heapBefore };
}

describe('web_fetch on hostile pages', () => {
  it.each(Object.keys(hostilePages))('converts %s (about 2 MiB) in bounded time and memory', async (path) => {
    const { result, ms, heapGrowth } = await measuredFetch(path);
    expect(ms).toBeLessThan(3_000);
    expect(heapGrowth).toBeLessThan(200 * MiB);
    expect(result).toMatch(/^URL: /);
    // Within the context budget of a 128k window (51,200 characters) plus the header.
    expect(result.length).toBeLessThan(55_000);
  });

  it('keeps list indentation at a few levels however deep the nesting', async () => {
    const { result } = await measuredFetch('/nested-ul');
    const indents = [...result.matchAll(/^( *)- x$/gm)].map((match) => match[1]?.length ?? 0);
    expect(indents.length).toBeGreaterThan(100);
    expect(Math.max(...indents)).toBe(12);
  });

  it('reads the title from an unclosed <title> without scanning the page again for each one', async () => {
    const { result } = await measuredFetch('/unclosed-title');
    expect(result).toMatch(/\nTitle: (<title>){142}<title\n/);
  });

  it('stops decompressing a gzip bomb at the size cap', async () => {
    const { result, ms, heapGrowth } = await measuredFetch('/gzip-bomb');
    expect(ms).toBeLessThan(3_000);
    expect(heapGrowth).toBeLessThan(200 * MiB);
    expect(result).toContain(`the download stopped at the ${2 * MiB}-byte limit`);
  });

  it.each(['/deflate-bomb', '/br-bomb'])('stops decompressing %s at the size cap', async (path) => {
    const { result, ms } = await measuredFetch(path);
    expect(ms).toBeLessThan(3_000);
    expect(result).toContain(`the download stopped at the ${2 * MiB}-byte limit`);
  });

  it('stops reading a compressed stream that never grows once the bytes received reach their cap', async () => {
    const { result, ms } = await measuredFetch('/endless-empty-gzip');
    expect(ms).toBeLessThan(3_000);
    expect(result).toContain(`the download stopped after ${2 * MiB} bytes were received`);
    expect(result).toContain('(empty body)');
  });

  it('stops converting when its share of the deadline is spent, keeping what it converted', async () => {
    const { result } = await measuredFetch('/nested-div', { convertBudgetMs: 0 });
    expect(result).toContain('Note: converting the page to text ran out of time; the end of the page is missing.');
    expect(result).toContain('\nx\nx\n');
  });

  it('caps JSON and plain text pages like HTML', async () => {
    const { result, ms } = await measuredFetch('/big-json');
    expect(ms).toBeLessThan(3_000);
    expect(result).toContain(`the download stopped at the ${2 * MiB}-byte limit`);
    expect(result).toContain('Call web_fetch again with start_char=51200');
  });
});

describe('convertHtml', () => {
  it('decodes every named entity of HTML', () => {
    expect(htmlToText('<p>&Eacute;t&eacute; &notin; &Omega; &amp &frac78; &#x1F600;</p>')).toBe('Été ∉ Ω & ⅞ 😀');
  });

  it('keeps headings, paragraphs, nested numbered lists, links and tables', () => {
    const html = '<h2>News</h2><p>One <a href="b">two</a></p><ol><li>a<ul><li>b</li></ul></li><li>c</li></ol><table><tr><td>x</td><td>y</td></tr></table>';
    expect(htmlToText(html, 'https://example.com/a/')).toBe('## News\n\nOne [two](https://example.com/a/b)\n\n1. a\n  - b\n2. c\n\nx | y');
  });

  it('stops at the character cap and says so', () => {
    const converted = convertHtml(repeat('<p>word</p>', 100_000), { maxChars: 1_000 });
    expect(converted.stopped).toBe('size');
    expect(converted.text.length).toBeLessThanOrEqual(1_000);
  });

  it('stops when the time budget is spent and says so', () => {
    const converted = convertHtml(repeat('<p>word</p>'), { deadline: performance.now() - 1 });
    expect(converted.stopped).toBe('time');
    expect(converted.text.length).toBeLessThan(100_000);
  });

  it('keeps at most 8,192 characters of an attribute and drops link targets over 4,096', () => {
    expect(htmlToText(`<img alt="${'a'.repeat(100_000)}">`)).toHaveLength(8_192);
    expect(htmlToText(`<a href="/${'h'.repeat(5_000)}">label</a>`, 'https://example.com/')).toBe('label');
    expect(htmlToText(`<a href="/${'h'.repeat(4_000)}">label</a>`, 'https://example.com/')).toMatch(/^\[label\]\(https:\/\/example\.com\/h{4000}\)$/);
  });

  it('ends an open link when a new one starts, as browsers do', () => {
    expect(htmlToText('<a href="/1">one <a href="/2">two</a> three</a>', 'https://example.com/')).toBe('[one](https://example.com/1) [two](https://example.com/2) three');
  });
});
