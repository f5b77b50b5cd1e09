// The API clients' fetch over undici's request (src/adapters/http/api-fetch.ts), against a loopback
// HTTP server: what a server sends arrives as Node's fetch would deliver it, for the model SDKs and
// for Slack's Web API client.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createApiFetch, createWholeAnswerFetch, maxEventBytes, maxResponseBytes } from '../../src/adapters/http/api-fetch.js';
import { OpenAIModelClient } from '../../src/adapters/model/openai-model-client.js';
import { webApi } from '@slack/bolt';
import { slackClientOptions } from '../../src/adapters/slack/app.js';
import { boltLogger } from '../../src/adapters/slack/bolt-logger.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { until } from '../support/wait.js';

interface Seen {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;
const modelFetch = createApiFetch();

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering every request with `answer`, recording what it was sent. */
async function serve(answer: (seen: Seen, response: import('node:http').ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const each = { method: request.method ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(each);
      answer(each, response);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

async function closeServer(): Promise<void> {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
}

/** A server that writes `filler` over and over, as fast as the socket takes it, until the reader goes away. */
async function endlessServer(contentType: string, filler: string): Promise<{ url: string; sent: () => number; closed: () => boolean }> {
  let sent = 0;
  let closed = false;
  const chunk = Buffer.from(filler.repeat(Math.ceil((256 * 1024) / filler.length)));
  const { url } = await serve((_seen, response) => {
    response.writeHead(200, { 'content-type': contentType });
    const more = () => {
      while (!closed && response.write(chunk)) sent += chunk.length;
    };
    response.on('drain', more);
    response.on('close', () => (closed = true));
    more();
  });
  return { url, sent: () => sent, closed: () => closed };
}

const events = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello ' }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: 'there.' }, finish_reason: 'stop' }] },
  { choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } },
].map((event) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', ...event })}\n\n`).join('') + 'data: [DONE]\n\n';

describe('modelFetch', () => {
  it('sends the method, headers and text body as given, and returns status, headers and body', async () => {
    const { url, seen } = await serve((_seen, response) => {
      response.setHeader('x-request-id', 'r1');
      response.setHeader('set-cookie', ['a=1', 'b=2']);
      response.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const response = await modelFetch(`${url}/v1/things`, { method: 'POST', headers: { Authorization: 'Bearer k', 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-request-id')).toBe('r1');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ ok: true });
    expect(seen[0]).toMatchObject({ method: 'POST', body: '{"a":1}', headers: { authorization: 'Bearer k', 'content-type': 'application/json' } });
    // Nothing asks the server to compress (a stream should arrive as it is written).
    expect(seen[0]?.headers['accept-encoding']).toBeUndefined();
  });

  it('decodes a body the server compressed unasked (gzip and br), as Node\'s fetch would', async () => {
    for (const [encoding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
      const { url } = await serve((_seen, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': encoding }).end(compress(Buffer.from(events)));
      });
      const client = new OpenAIModelClient({ apiKey: 'k', baseURL: `${url}/v1`, maxRetries: 0 });
      const answer = await client.complete({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [], cacheKey: 's' }, { role: 'worker' });
      expect(answer.message.content).toBe('Hello there.');
      expect(answer.usage).toEqual({ promptTokens: 7, cachedTokens: 0, completionTokens: 2 });
      server?.closeAllConnections();
      await new Promise<void>((resolve) => server?.close(() => resolve()));
      server = undefined;
    }
  });

  it('fails a body cut by a corrupt encoding instead of returning part of it', async () => {
    const { url } = await serve((_seen, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }).end(Buffer.from('not gzip at all'));
    });
    const response = await modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toThrow();
  });

  it('fails a body past its cap instead of reading it all: a decompression bomb, an endless body', async () => {
    // 48 MiB of zeros compress to about 48 KB: decoded whole, it would pass the 32 MiB cap.
    const bomb = gzipSync(Buffer.alloc(48 * 1024 * 1024));
    let { url } = await serve((_seen, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb);
    });
    let response = await modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await expect(response.arrayBuffer()).rejects.toThrow(`model response: more than ${maxResponseBytes} bytes (decoded); the rest was not read`);
    await closeServer();
    const endless = await endlessServer('application/json', 'a');
    const small = createApiFetch({ maxResponseBytes: 4 * 1024 * 1024 });
    response = await small(`${endless.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toThrow('model response: more than 4194304 bytes (decoded)');
    await until(endless.closed, 5_000, 'the server sees the connection closed');
    expect(endless.sent()).toBeLessThan(64 * 1024 * 1024);
  });

  it('passes an event stream far longer than one event may be, whichever blank lines end its events', async () => {
    for (const end of ['\n\n', '\r\r', '\r\n\r\n']) {
      const event = `data: ${'x'.repeat(1_000)}${end}`;
      const body = event.repeat(3_000); // about 3 MB, each event 1 KB
      const { url } = await serve((_seen, response) => response.writeHead(200, { 'content-type': 'text/event-stream' }).end(body));
      const response = await modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      expect((await response.text()).length).toBe(body.length);
      await closeServer();
    }
  });

  it('fails an event stream whose event never ends, before the SDK spends minutes rescanning it', async () => {
    // The SDK's SSE decoder rescans an open event with every chunk; an event is a delta of a few
    // hundred bytes. Short lines without the blank line that ends an event count as one event.
    for (const filler of ['a', 'data: x\n', 'x\n\r\n']) {
      const endless = await endlessServer('text/event-stream', filler);
      const client = new OpenAIModelClient({ apiKey: 'k', baseURL: `${endless.url}/v1`, maxRetries: 0 });
      await expect(client.complete({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [], cacheKey: 's' }, { role: 'worker' }))
        .rejects.toThrow(`an event of more than ${maxEventBytes} bytes`);
      await until(endless.closed, 5_000, 'the server sees the connection closed');
      expect(endless.sent()).toBeLessThan(64 * 1024 * 1024);
      await closeServer();
    }
  });

  it("fails a redirect when told to refuse them (Slack's client is), as Node's fetch does", async () => {
    const { url } = await serve((_seen, response) => {
      response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    });
    await expect(modelFetch(`${url}/api/chat.postMessage`, { method: 'POST', body: 'a=1', redirect: 'error' })).rejects.toThrow('redirected (HTTP 302) and redirects are refused');
    const followed = await modelFetch(`${url}/v1/models`, { method: 'GET' });
    expect(followed.status).toBe(302);
  });

  it('gives a 204 no body', async () => {
    const { url } = await serve((_seen, response) => response.writeHead(204).end());
    const response = await modelFetch(`${url}/v1/x`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('hands a body that is not text (a stream) to Node\'s fetch, which sends it whole', async () => {
    const { url, seen } = await serve((_seen, response) => response.writeHead(200).end('ok'));
    const body = new Blob(['part one, ', 'part two']);
    const response = await modelFetch(`${url}/v1/files`, { method: 'POST', body });
    expect(await response.text()).toBe('ok');
    expect(seen[0]?.body).toBe('part one, part two');
  });

  it('sends again, once and on a new connection, when the server closed a kept-alive connection before answering', async () => {
    // The server closes an idle connection just as the next request goes out on it (its idle
    // timeout racing ours): here, deterministically, every second request on a connection.
    const perSocket = new Map<unknown, number>();
    const { url, seen } = await serve((_seen, response) => response.end('done'));
    server?.prependListener('request', (request) => {
      const count = (perSocket.get(request.socket) ?? 0) + 1;
      perSocket.set(request.socket, count);
      if (count === 2) request.socket.destroy();
    });
    expect(await (await modelFetch(url, { method: 'POST', body: 'first' })).text()).toBe('done');
    expect(await (await modelFetch(url, { method: 'POST', body: 'second' })).text()).toBe('done');
    expect(perSocket.size).toBe(2);
    expect(seen.map((each) => each.body)).toEqual(['first', 'second']);
  });

  it('gives up after that one more try: a server that closes every connection fails the call', async () => {
    let attempts = 0;
    server = createServer((request) => {
      attempts += 1;
      request.socket.destroy();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await expect(modelFetch(url, { method: 'POST', body: 'x' })).rejects.toThrow(/other side closed|socket/i);
    expect(attempts).toBe(2);
  });

  it('stops at once when the signal aborts while the server is silent', async () => {
    const { url } = await serve(() => undefined);
    const controller = new AbortController();
    const pending = modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}', signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop now')), 50);
    await expect(pending).rejects.toThrow();
  });
});

describe('the whole-answer fetch (what Slack\'s client reads)', () => {
  const wholeFetch = createWholeAnswerFetch({ name: 'Slack API response' });

  it('reads the answer whole: status, headers by any case, a body decoded from gzip, JSON', async () => {
    const { url, seen } = await serve((_seen, response) => {
      response.setHeader('Set-Cookie', ['a=1', 'b=2']);
      response.writeHead(429, { 'content-type': 'application/json', 'Retry-After': '7', 'content-encoding': 'gzip' }).end(gzipSync('{"ok":false,"error":"ratelimited"}'));
    });
    const answer = await wholeFetch(`${url}/api/chat.postMessage`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'channel=C1&text=hi' });
    expect(seen[0]).toMatchObject({ method: 'POST', body: 'channel=C1&text=hi' });
    expect(seen[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect({ ok: answer.ok, status: answer.status, statusText: answer.statusText }).toEqual({ ok: false, status: 429, statusText: 'Too Many Requests' });
    expect(answer.headers.get('RETRY-AFTER')).toBe('7');
    expect(answer.headers.get('set-cookie')).toBe('a=1, b=2');
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(Object.fromEntries(answer.headers.entries())).toMatchObject({ 'retry-after': '7', 'content-type': 'application/json' });
    expect(await answer.json()).toEqual({ ok: false, error: 'ratelimited' });
    expect(Buffer.from(await answer.arrayBuffer()).toString()).toBe('{"ok":false,"error":"ratelimited"}');
  });

  it('fails an answer past the cap (a decompression bomb) with a one-line error naming whose answer it was', async () => {
    const bomb = gzipSync(Buffer.alloc(48 * 1024 * 1024));
    const { url } = await serve((_seen, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(bomb);
    });
    await expect(wholeFetch(`${url}/api/auth.test`, { method: 'POST', body: '' })).rejects.toThrow(`Slack API response: more than ${maxResponseBytes} bytes (decoded); the rest was not read`);
  });
});

describe("Slack's Web API client, as the app builds it", () => {
  const clientFor = (url: string) => {
    const parsed = parseConfig({ SLACK_BOT_TOKEN: 'xoxb-test', SLACK_SIGNING_SECRET: 'secret', SLACK_API_URL: url, OPENAI_API_KEY: 'k', MODEL: 'm' });
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    return new webApi.WebClient('xoxb-test', slackClientOptions(parsed.config, boltLogger(createLogger('silent', { write: () => undefined })), 0));
  };

  it('calls Slack through the capped fetch: a call is sent and answered as usual, an endless answer fails the call', async () => {
    const { url, seen } = await serve((_seen, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, channel: 'C1', ts: '1.2' }));
    });
    const answer = await clientFor(`${url}/api/`).chat.postMessage({ channel: 'C1', text: 'hello' });
    expect(answer).toMatchObject({ ok: true, ts: '1.2' });
    expect(seen[0]?.body).toContain('text=hello');
    expect(seen[0]?.headers.authorization).toBe('Bearer xoxb-test');
    await closeServer();
    // A broken Slack (or a proxy in front of it) that never ends its answer: through Node's fetch
    // the client would read it all into the heap.
    const endless = await endlessServer('application/json', '[');
    await expect(clientFor(`${endless.url}/api/`).reactions.add({ channel: 'C1', timestamp: '1.2', name: 'eyes' })).rejects.toThrow(
      `Slack API response: more than ${maxResponseBytes} bytes (decoded); the rest was not read`,
    );
    await until(endless.closed, 5_000, 'the server sees the connection closed');
  });
});
