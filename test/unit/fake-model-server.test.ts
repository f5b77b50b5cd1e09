import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  cachedTokensFor,
  lastMessageText,
  startFakeModelServer,
  type FakeModelServer,
} from '../fakes/fake-model-server.js';

interface Chunk {
  object: string;
  choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } } | null;
}

let server: FakeModelServer;

beforeEach(async () => {
  server = await startFakeModelServer({ chunkSize: 4 });
});

afterEach(async () => {
  await server.close();
});

function post(body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
    body: JSON.stringify(body),
    ...init,
  });
}

// Parses an SSE body into its `data:` payloads.
async function events(response: Response): Promise<string[]> {
  const text = await response.text();
  return text.split('\n\n').filter((block) => block !== '').map((block) => {
    expect(block.startsWith('data: ')).toBe(true);
    return block.slice('data: '.length);
  });
}

async function chunks(response: Response): Promise<Chunk[]> {
  const data = await events(response);
  expect(data.at(-1)).toBe('[DONE]');
  return data.slice(0, -1).map((item) => JSON.parse(item) as Chunk);
}

const messages = [{ role: 'user', content: 'hello' }];

describe('fake model server', () => {
  it('listens on 127.0.0.1 with a base URL ending in /v1', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('streams content in several chunk deltas, then a usage chunk and [DONE]', async () => {
    server.enqueue({ content: 'Hello there, world' });
    const response = await post({ model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const all = await chunks(response);
    expect(all.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    const withChoices = all.filter((chunk) => chunk.choices.length > 0);
    expect(withChoices[0]?.choices[0]?.delta).toMatchObject({ role: 'assistant', content: '' });
    const pieces = withChoices.map((chunk) => chunk.choices[0]?.delta['content']).filter((piece) => typeof piece === 'string' && piece !== '');
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('Hello there, world');
    expect(withChoices.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    const last = all.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toEqual({
      prompt_tokens: Math.ceil(JSON.stringify(messages).length / 4),
      completion_tokens: Math.ceil('Hello there, world'.length / 4),
      total_tokens: Math.ceil(JSON.stringify(messages).length / 4) + Math.ceil('Hello there, world'.length / 4),
      prompt_tokens_details: { cached_tokens: 0 },
    });
    expect(withChoices.every((chunk) => chunk.usage === null)).toBe(true);
  });

  it('keeps the bodies it answered unless told not to (keepBodies: false), and counts them either way', async () => {
    await events(await post({ model: 'm', messages, stream: true }));
    expect(server.requests[0]?.body.messages).toEqual(messages);
    await server.close();
    server = await startFakeModelServer({ keepBodies: false });
    let seen: unknown;
    server.respond((body) => ((seen = body.messages), { content: 'ok' }));
    await events(await post({ model: 'm', messages, stream: true }));
    expect(seen).toEqual(messages);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ rawBody: '', body: { messages: [] } });
  });

  it('sends no usage chunk unless stream_options.include_usage is set', async () => {
    const all = await chunks(await post({ model: 'm', messages, stream: true }));
    expect(all.every((chunk) => chunk.choices.length === 1 && chunk.usage === undefined)).toBe(true);
  });

  it('streams tool calls as index/id/name deltas followed by argument fragments', async () => {
    server.enqueue({ toolCalls: [{ id: 'call_a', name: 'search', arguments: { query: 'otters' } }, { name: 'noop', arguments: '{}' }] });
    const all = await chunks(await post({ model: 'm', messages, stream: true }));
    const deltas = all.map((chunk) => chunk.choices[0]?.delta ?? {});
    expect(deltas[0]).toMatchObject({ role: 'assistant', content: null });
    const fragments = deltas.flatMap((delta) => (delta['tool_calls'] as Array<Record<string, unknown>> | undefined) ?? []);
    expect(fragments[0]).toEqual({ index: 0, id: 'call_a', type: 'function', function: { name: 'search', arguments: '' } });
    const first = fragments.filter((fragment) => fragment['index'] === 0);
    expect(first.length).toBeGreaterThan(2);
    expect(first.map((fragment) => (fragment['function'] as { arguments: string }).arguments).join('')).toBe('{"query":"otters"}');
    expect(fragments.find((fragment) => fragment['index'] === 1)).toMatchObject({ id: expect.stringMatching(/^call_/), function: { name: 'noop' } });
    expect(all.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('streams reasoning as delta.reasoning_content before the content', async () => {
    server.enqueue({ reasoningContent: 'thinking hard', content: 'done' });
    const deltas = (await chunks(await post({ model: 'm', messages, stream: true }))).map((chunk) => chunk.choices[0]?.delta ?? {});
    const reasoning = deltas.map((delta) => delta['reasoning_content']).filter((piece) => typeof piece === 'string');
    expect(reasoning.join('')).toBe('thinking hard');
    const firstContent = deltas.findIndex((delta) => delta['content'] === 'done');
    const lastReasoning = deltas.findLastIndex((delta) => delta['reasoning_content'] !== undefined);
    expect(lastReasoning).toBeLessThan(firstContent);
  });

  it('answers non-streamed requests with one chat.completion object', async () => {
    server.enqueue({ content: 'plain', reasoningContent: 'why', toolCalls: [{ id: 'c1', name: 'f', arguments: { a: 1 } }], usage: { promptTokens: 10, cachedTokens: 4, completionTokens: 3 } });
    const response = await post({ model: 'm', messages });
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.json()).toMatchObject({
      object: 'chat.completion',
      model: 'm',
      choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'plain', reasoning_content: 'why', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] } }],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, prompt_tokens_details: { cached_tokens: 4 } },
    });
  });

  it('omits usage when the reply says usage: null', async () => {
    server.enqueue({ content: 'x', usage: null });
    const all = await chunks(await post({ model: 'm', messages, stream: true, stream_options: { include_usage: true } }));
    expect(all.some((chunk) => chunk.choices.length === 0)).toBe(false);
  });

  it('is understood by the real openai client', async () => {
    server.enqueue({ content: 'from the fake' });
    const client = new OpenAI({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]?.message.content).toBe('from the fake');
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('ok');
  });

  it('records every request with its parsed body, raw body, headers and times', async () => {
    const before = Date.now();
    await (await post({ model: 'm', messages, prompt_cache_key: 'k1' })).text();
    const [request] = server.requests;
    expect(request?.body).toEqual({ model: 'm', messages, prompt_cache_key: 'k1' });
    expect(request?.rawBody).toBe(JSON.stringify({ model: 'm', messages, prompt_cache_key: 'k1' }));
    expect(request?.headers['authorization']).toBe('Bearer test');
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.receivedAt).toBeGreaterThanOrEqual(before);
    expect(request?.respondedAt).toBeGreaterThanOrEqual(request?.receivedAt ?? Infinity);
    expect(server.requestsWhere((recorded) => recorded.body.prompt_cache_key === 'k1')).toHaveLength(1);
    expect(server.requestsWhere((recorded) => recorded.body.prompt_cache_key === 'k2')).toHaveLength(0);
  });

  it('waits for requests to arrive and times out with a clear error', async () => {
    const waiting = server.waitForRequests(2, { timeoutMs: 2000 });
    const matching = server.waitFor((request) => lastMessageText(request.body) === 'second');
    await (await post({ model: 'm', messages: [{ role: 'user', content: 'first' }] })).text();
    await (await post({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'sec' }, { type: 'text', text: 'ond' }] }] })).text();
    expect(await waiting).toHaveLength(2);
    expect((await matching).index).toBe(1);
    await expect(server.waitForRequests(3, { timeoutMs: 50 })).rejects.toThrow(/timed out after 50 ms waiting for 3 requests/);
  });

  it('uses queued replies in order, then the handler, then the default reply', async () => {
    server.enqueue({ content: 'first' }, { content: 'second' });
    server.respond((body, { index }) => (lastMessageText(body).includes('<role-change') ? { content: `decider ${index}` } : undefined));
    const answer = async (content: string) => {
      const response = await post({ model: 'm', messages: [{ role: 'user', content }] });
      const json = (await response.json()) as { choices: Array<{ message: { content: string } }> };
      return json.choices[0]?.message.content;
    };
    expect(await answer('<role-change to="decider">')).toBe('first');
    expect(await answer('x')).toBe('second');
    expect(await answer('<role-change to="decider">')).toBe('decider 2');
    expect(await answer('x')).toBe('ok');
  });

  it('answers errors with status, an OpenAI error body and retry headers', async () => {
    server.enqueue({ status: 429, retryAfter: 2, retryAfterMs: 1500 }, { status: 500, errorMessage: 'boom' });
    const limited = await post({ model: 'm', messages, stream: true });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(limited.headers.get('retry-after-ms')).toBe('1500');
    expect(await limited.json()).toMatchObject({ error: { type: 'rate_limit_exceeded' } });
    const failed = await post({ model: 'm', messages });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: { message: 'boom', type: 'server_error' } });
  });

  it('delays a reply by delayMs', async () => {
    server.enqueue({ delayMs: 150 });
    const started = Date.now();
    await (await post({ model: 'm', messages })).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('releases a hanging request when the client aborts', async () => {
    server.enqueue({ hang: true });
    const controller = new AbortController();
    const pending = post({ model: 'm', messages, stream: true }, { signal: controller.signal });
    const [request] = await server.waitForRequests(1);
    expect(request?.respondedAt).toBeUndefined();
    controller.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(() => request?.respondedAt).toBeDefined();
  });

  it('closes promptly while a request hangs', async () => {
    server.enqueue({ hang: true });
    const pending = post({ model: 'm', messages }).catch((error: unknown) => error);
    await server.waitForRequests(1);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
    server = await startFakeModelServer();
  });

  it('can stall or cut a stream after some chunks', async () => {
    server.enqueue({ content: 'abcdefghijkl', dropAfterChunks: 2 }, { content: 'abcdefghijkl', hangAfterChunks: 2 });
    const dropped = await post({ model: 'm', messages, stream: true });
    expect(dropped.status).toBe(200);
    await expect(dropped.text()).rejects.toThrow();

    const stalled = await post({ model: 'm', messages, stream: true });
    const reader = stalled.body?.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (received.split('\n\n').length <= 2) received += decoder.decode((await reader?.read())?.value);
    expect(received.split('\n\n').filter((block) => block !== '')).toHaveLength(2);
    const next = await Promise.race([reader?.read(), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 100))]);
    expect(next).toBe('still waiting');
    await reader?.cancel();
  });

  it('forgets everything on reset', async () => {
    server.enqueue({ content: 'queued' });
    server.respond(() => ({ content: 'handled' }));
    await (await post({ model: 'm', messages })).text();
    server.reset();
    expect(server.requests).toHaveLength(0);
    const json = (await (await post({ model: 'm', messages })).json()) as { choices: Array<{ message: { content: string } }> };
    expect(json.choices[0]?.message.content).toBe('ok');
  });
});

describe('cachedTokensFor', () => {
  it('caches nothing under 1,024 shared tokens', () => {
    expect(cachedTokensFor(0)).toBe(0);
    expect(cachedTokensFor(1023)).toBe(0);
  });

  it('floors to whole 128-token blocks from 1,024 on', () => {
    expect(cachedTokensFor(1024)).toBe(1024);
    expect(cachedTokensFor(1151)).toBe(1024);
    expect(cachedTokensFor(1152)).toBe(1152);
    expect(cachedTokensFor(5000)).toBe(4992);
  });
});

describe('fake model server cache simulation', () => {
  let cached: FakeModelServer;
  // Exactly 4,000 characters of JSON per message, i.e. 1,000 estimated tokens.
  const big = (tag: string) => ({ role: 'user', content: tag.repeat(4000 - '{"role":"user","content":""}'.length) });

  beforeEach(async () => {
    cached = await startFakeModelServer({ simulateCache: true });
  });

  afterEach(async () => {
    await cached.close();
  });

  async function cachedTokens(body: Record<string, unknown>): Promise<number> {
    const response = await fetch(`${cached.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', ...body }) });
    const json = (await response.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
    return json.usage.prompt_tokens_details.cached_tokens;
  }

  it('reports no cache for the first request of a key', async () => {
    expect(await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] })).toBe(0);
  });

  it('reports the shared prefix floored to 128-token blocks for the same key', async () => {
    await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] });
    // Shared: "[" + 4,000 chars of a + "," + 4,000 chars of b = 8,002 chars = 2,000 tokens → 1,920.
    expect(await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b'), big('c')] })).toBe(1920);
  });

  it('reports 0 when the shared prefix is under 1,024 tokens', async () => {
    await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] });
    expect(await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('c')] })).toBe(0);
  });

  it('keeps keys apart', async () => {
    await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] });
    expect(await cachedTokens({ prompt_cache_key: 's2', messages: [big('a'), big('b')] })).toBe(0);
    expect(await cachedTokens({ prompt_cache_key: 's2', messages: [big('a'), big('b')] })).toBe(2000 - (2000 % 128));
  });

  it('shares nothing when the tools differ', async () => {
    await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')], tools: [] });
    expect(await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')], tools: [{ type: 'function' }] })).toBe(0);
  });

  it('does not learn from failed requests', async () => {
    cached.enqueue({ status: 500 });
    await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] }).catch(() => 0);
    expect(await cachedTokens({ prompt_cache_key: 's1', messages: [big('a'), big('b')] })).toBe(0);
  });
});
