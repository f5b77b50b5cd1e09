// web_fetch against a local node:http server. Only loopback traffic is ever sent: hosts that
// stand for public or private machines are resolved by an injected resolver and refused, or
// pinned to 127.0.0.1 by an injected checker.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError, ToolError } from '../../src/core/errors.js';
import type { AnyTool, ToolContext } from '../../src/core/tool.js';
import { htmlToText } from '../../src/tools/html-to-text.js';
import { blockedAddressReason, vetUrl, type Resolver, type VettedTarget } from '../../src/tools/web-address.js';
import { fetchPage, webTools, type WebToolsOptions } from '../../src/tools/web.js';
import { toolContext } from '../support/tool-context.js';

const context = toolContext;

const page = `<!doctype html><html><head><title>Test page</title><style>body { color: red }</style>
<script>alert("<p>not text</p>")</script></head><body><nav><a href="/">Home</a></nav>
<h1>Hello</h1><p>Some <b>bold</b>   text &amp; a <a href="/docs">link</a>.</p>
<ul><li>first</li><li>second</li></ul></body></html>`;

const requests: string[] = [];
let server: http.Server;
let base: string;
let port: number;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests.push(`${request.headers.host ?? ''} ${request.url ?? ''}`);
    const url = request.url ?? '/';
    if (url === '/page') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    } else if (url === '/redirect') {
      response.writeHead(302, { location: '/page' }).end();
    } else if (url.startsWith('/loop')) {
      response.writeHead(301, { location: `/loop${url.length}` }).end();
    } else if (url === '/big') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('a'.repeat(4096));
      // Keep streaming until the client hangs up: the cap, not the server, must end the download.
      const timer = setInterval(() => response.write('b'.repeat(4096)), 1);
      response.on('close', () => clearInterval(timer));
    } else if (url === '/gzip') {
      response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync(page));
    } else if (url === '/image') {
      response.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0]));
    } else if (url === '/json') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    } else if (url === '/missing') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    } else if (url === '/slow') {
      // Never answers.
    } else if (url === '/host') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(`host=${request.headers.host ?? ''}`);
    } else if (url === '/to-private') {
      response.writeHead(302, { location: 'http://internal.test/secret' }).end();
    } else if (url === '/to-metadata') {
      response.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function fetchText(url: string, options: WebToolsOptions, overrides: Partial<ToolContext> = {}): Promise<string> {
  const [tool] = webTools(options) as [AnyTool];
  return tool.execute(tool.input.parse({ url }), context(overrides));
}

/** Stands in for public DNS: the names map to private or public addresses, nothing is sent. */
const fakeResolver: Resolver = async (hostname) => {
  const table: Record<string, string[]> = {
    'internal.test': ['10.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'mixed.test': ['93.184.216.34', '127.0.0.1'],
    'public.test': ['93.184.216.34'],
    'mapped.test': ['::ffff:10.1.2.3'],
  };
  const addresses = table[hostname];
  if (!addresses) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

/** A checker that treats public.test as a public host but connects it to the local server. */
const pinnedVet = (seen: string[]) => async (url: URL): Promise<VettedTarget> => {
  seen.push(url.href);
  if (url.hostname === 'public.test') return { addresses: [{ address: '127.0.0.1', family: 4 }] };
  return vetUrl(url, { allowPrivate: false, resolve: fakeResolver });
};

describe('web_fetch', () => {
  it('converts HTML to readable text with the title and absolute links', async () => {
    const result = await fetchText(`${base}/page`, { allowPrivate: true });
    expect(result).toContain(`URL: ${base}/page`);
    expect(result).toContain('Title: Test page');
    expect(result).toContain(`# Hello\n\nSome bold text & a [link](${base}/docs).\n\n- first\n- second`);
    expect(result).not.toContain('alert');
    expect(result).not.toContain('Home');
  });

  it('follows redirects and reports where it started', async () => {
    const result = await fetchText(`${base}/redirect`, { allowPrivate: true });
    expect(result).toContain(`URL: ${base}/page`);
    expect(result).toContain(`Redirected from: ${base}/redirect`);
    expect(result).toContain('# Hello');
  });

  it('gives up after five redirects', async () => {
    await expect(fetchText(`${base}/loop`, { allowPrivate: true })).rejects.toThrow('too many redirects');
  });

  it('stops reading at the size cap and says the page was truncated', async () => {
    const result = await fetchText(`${base}/big`, { allowPrivate: true, maxBytes: 10_000 });
    expect(result).toContain('the download stopped at the 10000-byte limit');
    const body = result.split('\n\n').slice(1).join('\n\n');
    expect(body).toHaveLength(10_000);
  });

  it('cuts long text to the context budget and continues from start_char', async () => {
    const [tool] = webTools({ allowPrivate: true, maxBytes: 20_000 }) as [AnyTool];
    const first = await tool.execute(tool.input.parse({ url: `${base}/big` }), context({ contextWindow: 10_000 }));
    expect(first).toContain('showed characters 0–4000 of 20000. Call web_fetch again with start_char=4000');
    const next = await tool.execute(tool.input.parse({ url: `${base}/big`, start_char: 4000 }), context({ contextWindow: 10_000 }));
    expect(next).toContain(`[… continuing at character 4000 of 20000]\n${'a'.repeat(96)}bbbb`);
  });

  it('decompresses gzip responses', async () => {
    expect(await fetchText(`${base}/gzip`, { allowPrivate: true })).toContain('# Hello');
  });

  it('passes non-HTML text through and reports the status of errors', async () => {
    expect(await fetchText(`${base}/json`, { allowPrivate: true })).toMatch(/Content-Type: application\/json\n\n\{"ok":true\}$/);
    const missing = await fetchText(`${base}/missing`, { allowPrivate: true });
    expect(missing).toContain('Status: 404 Not Found');
    expect(missing).toContain('no such page');
  });

  it('refuses binary content types', async () => {
    await expect(fetchText(`${base}/image`, { allowPrivate: true })).rejects.toThrow('binary content (image/png)');
  });

  it('times out a server that does not answer', async () => {
    const fetching = fetchText(`${base}/slow`, { allowPrivate: true, timeoutMs: 300 });
    await expect(fetching).rejects.toBeInstanceOf(ToolError);
    await expect(fetching).rejects.toThrow('timed out after 0.3 s');
  });

  it('stops when the run is cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('pause')), 100);
    const fetching = fetchText(`${base}/slow`, { allowPrivate: true }, { signal: controller.signal });
    await expect(fetching).rejects.toBeInstanceOf(CancelledError);
  });

  it('only fetches http and https URLs', async () => {
    await expect(fetchText('file:///etc/passwd', { allowPrivate: true })).rejects.toThrow('only http and https');
    await expect(fetchText('ftp://example.com/', { allowPrivate: true })).rejects.toThrow('only http and https');
    await expect(fetchText('not a url', { allowPrivate: true })).rejects.toThrow('not an absolute URL');
  });

  it('refuses loopback and private addresses by default', async () => {
    const before = requests.length;
    for (const url of [`${base}/page`, `http://localhost:${port}/page`, `http://[::1]:${port}/page`, 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]/']) {
      const fetching = fetchText(url, { allowPrivate: false });
      await expect(fetching, url).rejects.toBeInstanceOf(ToolError);
      await expect(fetching, url).rejects.toThrow(/refused to fetch .*(loopback|private|link-local) address/);
    }
    expect(requests.length).toBe(before);
  });

  it('refuses a redirect from an allowed host to a private one, before connecting to it', async () => {
    const seen: string[] = [];
    const signal = AbortSignal.timeout(5_000);
    await expect(fetchPage(new URL(`http://public.test:${port}/to-private`), { vet: pinnedVet(seen), maxBytes: 10_000, signal })).rejects.toThrow(
      'refused to fetch http://internal.test: private address (internal.test resolves to 10.0.0.1)',
    );
    await expect(fetchPage(new URL(`http://public.test:${port}/to-metadata`), { vet: pinnedVet(seen), maxBytes: 10_000, signal })).rejects.toThrow(
      'link-local address',
    );
    expect(seen).toEqual([`http://public.test:${port}/to-private`, 'http://internal.test/secret', `http://public.test:${port}/to-metadata`, 'http://169.254.169.254/latest/meta-data/']);
  });

  it('connects to the vetted address while keeping the host name in the Host header', async () => {
    const fetched = await fetchPage(new URL(`http://public.test:${port}/host`), { vet: pinnedVet([]), maxBytes: 10_000, signal: AbortSignal.timeout(5_000) });
    expect(fetched.body.toString()).toBe(`host=public.test:${port}`);
  });
});

describe('vetUrl', () => {
  it('refuses a host when any of its addresses is private', async () => {
    await expect(vetUrl(new URL('http://mixed.test/'), { allowPrivate: false, resolve: fakeResolver })).rejects.toThrow('loopback address');
    await expect(vetUrl(new URL('http://mapped.test/'), { allowPrivate: false, resolve: fakeResolver })).rejects.toThrow('private address');
    await expect(vetUrl(new URL('http://metadata.test/'), { allowPrivate: false, resolve: fakeResolver })).rejects.toThrow('link-local address');
  });

  it('accepts public hosts and returns the addresses to connect to', async () => {
    expect(await vetUrl(new URL('https://public.test/x'), { allowPrivate: false, resolve: fakeResolver })).toEqual({ addresses: [{ address: '93.184.216.34', family: 4 }] });
    expect(await vetUrl(new URL('http://internal.test/'), { allowPrivate: true, resolve: fakeResolver })).toEqual({ addresses: [{ address: '10.0.0.1', family: 4 }] });
  });

  it('reports unresolvable hosts', async () => {
    await expect(vetUrl(new URL('http://nowhere.test/'), { allowPrivate: false, resolve: fakeResolver })).rejects.toThrow('cannot resolve nowhere.test');
  });
});

describe('blockedAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'],
    ['10.0.0.1', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'], ['fd12::1', 'private'], ['fc00::1', 'private'],
    ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['febf::1', 'link-local'],
    ['0.0.0.0', 'unspecified'], ['::', 'unspecified'], ['100.64.0.1', 'shared (CGNAT)'], ['100.127.255.255', 'shared (CGNAT)'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:169.254.169.254', 'link-local'], ['::ffff:10.0.0.1', 'private'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'private'], ['64:ff9b::a00:1', 'private'], ['224.0.0.1', 'multicast'], ['255.255.255.255', 'reserved'],
    // Issue #15: every special-purpose range, and IPv6 forms that lead to an IPv4 address.
    ['0.1.2.3', 'unspecified'], ['100.64.0.0', 'shared (CGNAT)'], ['192.0.0.8', 'reserved'], ['192.0.2.1', 'reserved'], ['198.18.0.1', 'reserved'],
    ['203.0.113.9', 'reserved'], ['240.0.0.1', 'reserved'], ['fd00:ec2::254', 'private'], ['ff02::1', 'multicast'], ['fec0::1', 'site-local'],
    ['::ffff:0:0', 'unspecified'], ['::ffff:0:7f00:1', 'IPv4-translated'], ['::7f00:1', 'reserved'], ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'], ['64:ff9b:1::808:808', 'NAT64 local-use'], ['2001::1', 'Teredo tunnel'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo tunnel'], ['100::1', 'discard-only'], ['2002:a00:1::1', 'private'], ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'], ['2001:db8::1', 'reserved'], ['4000::1', 'reserved'], ['fe80::1%eth0', 'link-local'], ['[::1]', 'loopback'],
  ])('blocks %s as %s', (address, reason) => {
    expect(blockedAddressReason(address)).toBe(reason);
  });

  it('refuses what is not an IP address', () => {
    expect(blockedAddressReason('example.com')).toBe('not an IP address');
    expect(blockedAddressReason('127.1')).toBe('not an IP address');
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2a00:1450:4001:80b::200e'])('allows %s', (address) => {
    expect(blockedAddressReason(address)).toBeUndefined();
  });
});

describe('htmlToText', () => {
  it('keeps preformatted text and decodes entities', () => {
    expect(htmlToText('<p>a&nbsp;&lt;b&gt; &#65;&#x42;</p><pre>  x\n    y</pre>')).toBe('a <b> AB\n\n```\n  x\n    y\n```');
  });

  it('drops script, style, nav and head content', () => {
    expect(htmlToText('<head><title>t</title><meta charset="utf-8"></head><body><script>var a = "</div>";</script><style>p{}</style><nav>menu</nav><p>kept</p></body>')).toBe('kept');
  });
});
