// The Anthropic model client with the real SDK against the wire-level fake of the Messages API.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicModelClient, defaultMaxOutputTokens, type AnthropicModelClientOptions } from '../../src/adapters/model/anthropic-model-client.js';
import { ModelHealth } from '../../src/adapters/model/model-health.js';
import { CancelledError, ContextTooLongError, ImageRefusedError, ModelError } from '../../src/core/errors.js';
import type { ChatMessage, ToolDefinition } from '../../src/core/messages.js';
import type { ModelRequest } from '../../src/core/model-client.js';
import { startFakeAnthropicServer, type FakeAnthropicServer } from '../fakes/fake-anthropic-server.js';

let server: FakeAnthropicServer;

beforeEach(async () => {
  server = await startFakeAnthropicServer({ chunkSize: 3 });
});

afterEach(async () => {
  await server.close();
});

function client(options: Partial<AnthropicModelClientOptions> = {}): AnthropicModelClient {
  return new AnthropicModelClient({ apiKey: 'test-key', baseURL: server.url, baseDelayMs: 5, ...options });
}

const searchTool: ToolDefinition = {
  type: 'function',
  function: { name: 'search', description: 'Searches notes.', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
};

function request(messages: ChatMessage[], tools: ToolDefinition[] = []): ModelRequest {
  return { model: 'claude-sonnet-4-5', messages, tools, cacheKey: 'session-1' };
}

const hello: ChatMessage[] = [
  { role: 'system', content: 'You are Hippo.' },
  { role: 'user', content: 'Say hello.' },
];

async function expectRejection<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await promise.then(() => undefined, (rejection: unknown) => rejection);
  expect(error).toBeInstanceOf(type);
  return error as T;
}

describe('AnthropicModelClient: answers', () => {
  it('streams text, reporting each delta to onTextDelta and the answer start once', async () => {
    server.enqueue({ content: 'Hello from Hippo!' });
    const deltas: string[] = [];
    let starts = 0;
    const response = await client().complete(request(hello), { role: 'worker', onTextDelta: (delta) => deltas.push(delta), onResponseStart: () => (starts += 1) });
    expect(response.message).toEqual({ role: 'assistant', content: 'Hello from Hippo!' });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello from Hippo!');
    expect(starts).toBe(1);
  });

  it('sends a streamed Messages request: model, max_tokens, system, messages, tools, the key and the API version', async () => {
    await client().complete(request(hello, [searchTool]), { role: 'worker' });
    const [recorded] = server.requests;
    expect(recorded?.path).toBe('/v1/messages');
    expect(recorded?.wire).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 16_384,
      system: [{ type: 'text', text: 'You are Hippo.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.', cache_control: { type: 'ephemeral' } }] }],
      tools: [{ name: 'search', description: 'Searches notes.', input_schema: searchTool.function.parameters }],
      stream: true,
    });
    expect(recorded?.headers['authorization']).toBe('Bearer test-key');
    expect(recorded?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('caps max_tokens by model, or as configured', async () => {
    expect([defaultMaxOutputTokens('claude-3-haiku-20240307'), defaultMaxOutputTokens('claude-3-5-haiku-latest'), defaultMaxOutputTokens('claude-opus-4-5')]).toEqual([4_096, 8_192, 16_384]);
    await client({ maxOutputTokens: 2_000 }).complete(request(hello), { role: 'worker' });
    expect(server.requests[0]?.wire.max_tokens).toBe(2_000);
  });

  it('aggregates tool_use blocks from input_json_delta fragments, with null content', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'toolu_1', name: 'search', arguments: { query: 'otters and their habits', limit: 5 } },
        { id: 'toolu_2', name: 'read_note', arguments: '{"id":"n-42"}' },
        { id: 'toolu_3', name: 'list', arguments: '' },
      ],
    });
    const response = await client().complete(request(hello, [searchTool]), { role: 'worker' });
    expect(response.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'search', arguments: '{"query":"otters and their habits","limit":5}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'read_note', arguments: '{"id":"n-42"}' } },
        { id: 'toolu_3', type: 'function', function: { name: 'list', arguments: '{}' } },
      ],
    });
  });

  it('keeps text next to tool calls, and sends the exchange back as the API wants it', async () => {
    server.enqueue({ content: 'Let me look.', toolCalls: [{ id: 'toolu_a', name: 'search', arguments: { query: 'a' } }, { id: 'toolu_b', name: 'search', arguments: { query: 'b' } }] }, { content: 'Found both.' });
    const model = client();
    const first = await model.complete(request(hello, [searchTool]), { role: 'worker' });
    expect(first.message.content).toBe('Let me look.');
    const results: ChatMessage[] = [{ role: 'tool', tool_call_id: 'toolu_a', content: 'A' }, { role: 'tool', tool_call_id: 'toolu_b', content: 'B' }];
    const second = await model.complete(request([...hello, first.message, ...results], [searchTool]), { role: 'worker' });
    // The fake refuses tool results that do not answer the previous turn's tool_use blocks.
    expect(second.message.content).toBe('Found both.');
    expect(server.requests[1]?.wire.messages?.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'toolu_a', name: 'search', input: { query: 'a' } }, { type: 'tool_use', id: 'toolu_b', name: 'search', input: { query: 'b' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' }, { type: 'tool_result', tool_use_id: 'toolu_b', content: 'B', cache_control: { type: 'ephemeral' } }] },
    ]);
  });

  it('sends images as image blocks', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const withImage: ChatMessage[] = [hello[0]!, { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }];
    await client().complete(request(withImage), { role: 'worker' });
    expect(server.requests[0]?.wire.messages?.[0]?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png }, cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('reports an image the API refuses as ImageRefusedError naming that image (R22), without retrying', async () => {
    const good = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const part = (data: string) => ({ type: 'image_url' as const, image_url: { url: `data:image/png;base64,${data}` } });
    const withImages: ChatMessage[] = [hello[0]!, { role: 'user', content: [{ type: 'text', text: 'Compare.' }, part(good), { type: 'text', text: 'and' }, part('iVBORw0KGgo=')] }];
    const error = await client().complete(request(withImages), { role: 'worker' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ImageRefusedError);
    expect((error as ImageRefusedError).imageUrls).toEqual(['data:image/png;base64,iVBORw0KGgo=']);
    expect((error as ImageRefusedError).message).toMatch(/answered 400 invalid_request_error: messages\.0\.content\.3\.image\.source\.base64\.data: The image data you provided does not represent a valid image/);
    expect(server.requests).toHaveLength(1);
  });

  it('reports usage: prompt = input + cache reads + cache writes, from message_start and message_delta', async () => {
    server.enqueue({ content: 'x', usage: { promptTokens: 5_000, cachedTokens: 3_000, cacheWriteTokens: 1_500, completionTokens: 42 } });
    const response = await client().complete(request(hello), { role: 'worker' });
    expect(response.usage).toEqual({ promptTokens: 5_000, cachedTokens: 3_000, completionTokens: 42, cacheWriteTokens: 1_500 });
  });
});

describe('AnthropicModelClient: prompt cache', () => {
  const docs = 'MAIN.md: '.repeat(400);
  const context: ChatMessage[] = [
    { role: 'system', content: 'You are Hippo. '.repeat(300) },
    { role: 'user', content: docs },
    { role: 'user', content: 'Ada wrote: run the echo twice' },
  ];

  it('writes the documents on a segment\'s first call and reads them on the next, which writes all it sends', async () => {
    const cached = await startFakeAnthropicServer({ minCacheTokens: 1_024 });
    try {
      cached.enqueue({ toolCalls: [{ id: 'toolu_1', name: 'search', arguments: { query: 'x' } }] }, { content: 'done' });
      const model = new AnthropicModelClient({ apiKey: 'k', baseURL: cached.url });
      const first = await model.complete(request(context, [searchTool]), { role: 'worker' });
      expect(first.usage?.cachedTokens).toBe(0);
      // The first call caches system and memory documents (mark 2); the person's message is plain input.
      const documents = cached.requests[0]?.cache?.breakpoints.at(-1) ?? 0;
      expect(first.usage?.cacheWriteTokens).toBe(documents);
      expect(first.usage?.promptTokens).toBeGreaterThan(documents);
      const second = await model.complete(request([...context, first.message, { role: 'tool', tool_call_id: 'toolu_1', content: 'result' }], [searchTool]), { role: 'worker' });
      // It reads what the first call wrote and writes all it sends (mark 4: the tool result).
      expect(second.usage?.cachedTokens).toBe(documents);
      expect(second.usage?.cacheWriteTokens).toBe((second.usage?.promptTokens ?? 0) - (second.usage?.cachedTokens ?? 0));
    } finally {
      await cached.close();
    }
  });

  it('gives a fork the worker\'s whole context from the cache: identical at the wire up to one appended message (R1)', async () => {
    const cached = await startFakeAnthropicServer({ minCacheTokens: 1_024 });
    try {
      const model = new AnthropicModelClient({ apiKey: 'k', baseURL: cached.url });
      const worker: ChatMessage[] = [...context, { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'search', arguments: '{"query":"x"}' } }] }, { role: 'tool', tool_call_id: 'toolu_1', content: 'result '.repeat(200) }];
      await model.complete(request(worker, [searchTool]), { role: 'worker' });
      const summarizerInstruction: ChatMessage = { role: 'user', content: '<role-change role="summarizer">Summarize.</role-change>' };
      const summarizer = await model.complete(request([...worker, summarizerInstruction], [searchTool]), { role: 'summarizer' });
      const deciderInstruction: ChatMessage = { role: 'user', content: '<role-change role="decider">Decide.</role-change>' };
      const decider = await model.complete(request([...worker, deciderInstruction], [searchTool]), { role: 'decider' });
      const [workerRequest, ...forkRequests] = cached.requests;
      for (const forkRequest of forkRequests) {
        // Byte for byte: the fork's request is the worker's plus one message.
        const forkWire = { ...forkRequest.wire, messages: forkRequest.wire.messages?.slice(0, -1) };
        expect(JSON.stringify(forkWire)).toBe(JSON.stringify(workerRequest!.wire));
        expect(forkRequest.wire.messages).toHaveLength((workerRequest!.wire.messages?.length ?? 0) + 1);
      }
      // Each reads all of the worker's prompt; only its instruction is new. A summarizer's is written
      // for its own next call (it marks its last message); a decider's, which nothing reads again,
      // is plain input.
      for (const fork of [summarizer, decider]) expect(fork.usage?.cachedTokens).toBe(workerRequest!.cache?.promptTokens);
      expect(summarizer.usage?.cacheWriteTokens).toBe((summarizer.usage?.promptTokens ?? 0) - (summarizer.usage?.cachedTokens ?? 0));
      expect(summarizer.usage?.cacheWriteTokens).toBeGreaterThan(0);
      expect(summarizer.usage?.cacheWriteTokens).toBeLessThan(50);
      expect(decider.usage?.cacheWriteTokens).toBe(0);
      expect(decider.usage?.promptTokens).toBeGreaterThan(decider.usage?.cachedTokens ?? 0);
    } finally {
      await cached.close();
    }
  });

  it('reads nothing below the model\'s minimum cacheable prompt', async () => {
    const cached = await startFakeAnthropicServer({ minCacheTokens: 100_000 });
    try {
      const model = new AnthropicModelClient({ apiKey: 'k', baseURL: cached.url });
      await model.complete(request(context), { role: 'worker' });
      const again = await model.complete(request(context), { role: 'worker' });
      expect(again.usage).toMatchObject({ cachedTokens: 0, cacheWriteTokens: 0 });
    } finally {
      await cached.close();
    }
  });
});

describe('AnthropicModelClient: failures', () => {
  it('retries 429 (retry-after) and 529 overloaded, then succeeds', async () => {
    server.enqueue({ status: 429, retryAfter: 0, errorMessage: 'Number of request tokens has exceeded your per-minute rate limit' }, { status: 529, errorMessage: 'Overloaded' }, { content: 'finally' });
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write: (line: Buffer, _encoding, done) => void (lines.push(line.toString()), done()) }));
    const response = await client({ log }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('finally');
    expect(server.requests).toHaveLength(3);
    const retries = lines.map((line) => JSON.parse(line) as { msg: string; status?: number; error?: string }).filter((entry) => entry.msg === 'model-call-retry');
    expect(retries.map((entry) => entry.status)).toEqual([429, 529]);
    expect(retries[1]?.error).toMatch(/answered 529 overloaded_error: Overloaded$/);
  });

  it('retries an overloaded error sent inside the stream before any text', async () => {
    server.enqueue({ content: 'never shown', streamError: { type: 'overloaded_error', message: 'Overloaded' } }, { content: 'second try' });
    const deltas: string[] = [];
    const response = await client().complete(request(hello), { role: 'worker', onTextDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('second try');
    expect(deltas.join('')).toBe('second try');
    expect(server.requests).toHaveLength(2);
  });

  it('gives up on a permanent overload with a retryable 529 ModelError', async () => {
    server.respond(() => ({ status: 529, errorMessage: 'Overloaded' }));
    const error = await expectRejection(client({ maxRetries: 2 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error).toMatchObject({ retryable: true, status: 529 });
    expect(server.requests).toHaveLength(3);
  });

  it('follows x-should-retry: false over the status', async () => {
    server.enqueue({ status: 500, shouldRetry: false, errorMessage: 'do not retry' });
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a prompt longer than the window once: a 400 that says so, not retried', async () => {
    const small = await startFakeAnthropicServer({ contextWindow: 50 });
    try {
      const long: ChatMessage[] = [hello[0]!, { role: 'user', content: 'word '.repeat(200) }];
      const error = await expectRejection(new AnthropicModelClient({ apiKey: 'k', baseURL: small.url }).complete(request(long), { role: 'worker' }), ContextTooLongError);
      expect(error).toMatchObject({ retryable: false, status: 400 });
      expect(error.message).toMatch(/^model endpoint 127\.0\.0\.1:\d+ answered 400 invalid_request_error: prompt is too long: \d+ tokens > 50 maximum: the context is longer than the model's window/);
      expect(small.requests).toHaveLength(1);
      // A fork's request is refused the same way (its marks change nothing).
      const fork = [...long, { role: 'user', content: '<role-change role="summarizer">' } as ChatMessage];
      await expectRejection(new AnthropicModelClient({ apiKey: 'k', baseURL: small.url }).complete(request(fork), { role: 'summarizer' }), ContextTooLongError);
      expect(small.requests).toHaveLength(2);
    } finally {
      await small.close();
    }
  });

  it('says to check ANTHROPIC_API_KEY on a 401, and ANTHROPIC_BASE_URL when it ends in /v1', async () => {
    const keyed = await startFakeAnthropicServer({ apiKey: 'right-key' });
    try {
      const error = await expectRejection(new AnthropicModelClient({ apiKey: 'wrong-key', baseURL: keyed.url }).complete(request(hello), { role: 'worker' }), ModelError);
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/^model endpoint 127\.0\.0\.1:\d+ answered 401 authentication_error: invalid x-api-key: check ANTHROPIC_API_KEY$/);
    } finally {
      await keyed.close();
    }
    const doubled = await expectRejection(client({ baseURL: `${server.url}/v1` }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(doubled.message).toMatch(/answered 404 not_found_error: Not found: \/v1\/v1\/messages: ANTHROPIC_BASE_URL must not end in \/v1/);
    server.enqueue({ status: 404, errorMessage: 'model: claude-nine' });
    const unknown = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(unknown.message).toMatch(/answered 404 not_found_error: model: claude-nine: check MODEL and ANTHROPIC_BASE_URL$/);
  });

  it('names an HTML error page instead of quoting it', async () => {
    const { createServer } = await import('node:http');
    const proxy = createServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end(`<html><body>${'Bad gateway '.repeat(500)}</body></html>`);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (proxy.address() as { port: number }).port;
      const error = await expectRejection(client({ baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 }).complete(request(hello), { role: 'worker' }), ModelError);
      expect(error.message).toBe(`model endpoint 127.0.0.1:${port} answered 502 a web page instead of the API's JSON (is the base URL an API endpoint?)`);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('retries connection failures and names the setting to check', async () => {
    const url = server.url;
    await server.close();
    const error = await expectRejection(new AnthropicModelClient({ apiKey: 'k', baseURL: url, maxRetries: 1, baseDelayMs: 1 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(`cannot reach the model endpoint ${new URL(url).host} (ECONNREFUSED): check ANTHROPIC_BASE_URL and that the server is running`);
    server = await startFakeAnthropicServer();
  });

  it('times out an attempt that gets no data, and retries it', async () => {
    server.enqueue({ hang: true });
    const response = await client({ timeoutMs: 300 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('ok');
    // On a busy machine a retry can be slow enough to time out too; the hung one always is.
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('does not retry once text has streamed: a stalled stream fails as timed out', async () => {
    // message_start, ping, content_block_start, two text deltas, then silence.
    server.enqueue({ content: 'partial answer here', hangAfterChunks: 5 });
    const deltas: string[] = [];
    // A second of silence: long enough that a busy machine never times out between the first events.
    const error = await expectRejection(client({ timeoutMs: 1_000 }).complete(request(hello), { role: 'worker', onTextDelta: (delta) => deltas.push(delta) }), ModelError);
    expect(error.message).toContain('timed out');
    expect(deltas.join('')).toBe('partia');
    expect(server.requests).toHaveLength(1);
  });

  it('retries a stream cut before any text, but not one cut after text', async () => {
    server.enqueue({ content: 'first', dropAfterChunks: 2 }, { content: 'whole' });
    expect((await client().complete(request(hello), { role: 'worker' })).message.content).toBe('whole');
    server.enqueue({ content: 'partial answer here', dropAfterChunks: 4 });
    await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(server.requests).toHaveLength(3);
  });

  it('restarts the silence at every event: a steady stream longer than one silence completes', async () => {
    // About 15 events 40 ms apart (600 ms in all) against 200 ms of allowed silence.
    server.enqueue({ content: 'abcdefghijklmnopqrstuvwxyz0123', chunkDelayMs: 40 });
    const response = await client({ timeoutMs: 200 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('abcdefghijklmnopqrstuvwxyz0123');
    expect(server.requests).toHaveLength(1);
  });

  it('after the answer starts waits a full silence, not what was left of the start budget', async () => {
    // Gaps of 300 ms: past the 250 ms start budget, well inside the 2 s silence.
    server.enqueue({ content: 'abcdef', chunkDelayMs: 300 });
    const response = await client({ timeoutMs: 2_000, totalTimeoutMs: 250 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('abcdef');
  });

  it('fails a hung model after the total budget', async () => {
    server.respond(() => ({ hang: true }));
    const error = await expectRejection(client({ timeoutMs: 200, maxRetries: 50, totalTimeoutMs: 600 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.message).toMatch(/gave no answer within 1 s \(MODEL_TOTAL_TIMEOUT_SECONDS\)/);
    expect(server.requests.length).toBeLessThan(10);
  });

  it('throws CancelledError with the reason when aborted while the server hangs, and stops the request', async () => {
    server.enqueue({ hang: true });
    const controller = new AbortController();
    const pending = client().complete(request(hello), { role: 'worker', signal: controller.signal });
    const [recorded] = await server.waitForRequests(1);
    controller.abort('pause');
    const error = await expectRejection(pending, CancelledError);
    expect(error.reason).toBe('pause');
    await expect.poll(() => recorded?.respondedAt).toBeDefined();
  });

  it('throws CancelledError when aborted mid-stream rather than returning partial text', async () => {
    server.enqueue({ content: 'a long answer that keeps coming', chunkDelayMs: 20 });
    const controller = new AbortController();
    const error = await expectRejection(client().complete(request(hello), { role: 'worker', signal: controller.signal, onTextDelta: () => controller.abort('shutdown') }), CancelledError);
    expect(error.reason).toBe('shutdown');
  });
});

describe('AnthropicModelClient: endpoint health', () => {
  it('checks the endpoint: ok, unauthorized, unreachable', async () => {
    expect(await client().checkEndpoint()).toEqual({ status: 'ok', detail: expect.stringMatching(/answers$/) });
    expect(server.modelListings).toBe(1);
    const keyed = await startFakeAnthropicServer({ apiKey: 'right-key' });
    try {
      expect(await new AnthropicModelClient({ apiKey: 'wrong', baseURL: keyed.url }).checkEndpoint()).toEqual({ status: 'unauthorized', detail: expect.stringMatching(/check ANTHROPIC_API_KEY$/) });
    } finally {
      await keyed.close();
    }
    const gone = await startFakeAnthropicServer();
    await gone.close();
    expect(await client({ baseURL: gone.url }).checkEndpoint()).toEqual({ status: 'unreachable', detail: expect.stringMatching(/^cannot reach the model endpoint .*ECONNREFUSED/) });
  });

  it('keeps the endpoint status current from real calls (ModelHealth)', async () => {
    const gone = await startFakeAnthropicServer();
    await gone.close();
    const unreachable = client({ baseURL: gone.url, maxRetries: 0 });
    const health = new ModelHealth(unreachable, { check: () => unreachable.checkEndpoint(), isUnreachable: (error) => unreachable.isUnreachable(error), log: { info: () => undefined, warn: () => undefined } });
    await expectRejection(health.complete(request(hello), { role: 'worker' }), ModelError);
    expect(health.status).toBe('unreachable');
  });
});
