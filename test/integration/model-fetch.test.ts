// The model clients' fetch over undici's request (src/adapters/model/model-fetch.ts), against a
// loopback HTTP server: what a server sends arrives as Node's fetch would deliver it.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createModelFetch } from '../../src/adapters/model/model-fetch.js';
import { OpenAIModelClient } from '../../src/adapters/model/openai-model-client.js';

interface Seen {
  method: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;
const modelFetch = createModelFetch();

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
  return { url: `http://127.0.0.1:${(server?.address() as AddressInfo).port}`, seen };
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

  it('stops at once when the signal aborts while the server is silent', async () => {
    const { url } = await serve(() => undefined);
    const controller = new AbortController();
    const pending = modelFetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}', signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop now')), 50);
    await expect(pending).rejects.toThrow();
  });
});
