import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ModelHealth } from '../../src/adapters/model/model-health.js';
import { OpenAIModelClient, type OpenAIModelClientOptions } from '../../src/adapters/model/openai-model-client.js';
import { CancelledError, ContextTooLongError, ImageRefusedError, ModelError } from '../../src/core/errors.js';
import type { ChatMessage, ToolDefinition } from '../../src/core/messages.js';
import type { ModelRequest } from '../../src/core/model-client.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';

let server: FakeModelServer;

beforeEach(async () => {
  server = await startFakeModelServer({ chunkSize: 3 });
});

afterEach(async () => {
  await server.close();
});

function client(options: Partial<OpenAIModelClientOptions> = {}): OpenAIModelClient {
  return new OpenAIModelClient({ apiKey: 'test-key', baseURL: server.url, baseDelayMs: 5, ...options });
}

const searchTool: ToolDefinition = {
  type: 'function',
  function: { name: 'search', description: 'Searches notes.', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
};

function request(messages: ChatMessage[], tools: ToolDefinition[] = []): ModelRequest {
  return { model: 'fake-model', messages, tools, cacheKey: 'session-1' };
}

const hello: ChatMessage[] = [
  { role: 'system', content: 'You are Hippo.' },
  { role: 'user', content: 'Say hello.' },
];

/** A web server (a UI, a login page, a proxy's error page) answering every request with `page`. */
async function startWebPageServer(page: string): Promise<{ url: string; status: number; requests: number; close(): Promise<void> }> {
  const { createServer } = await import('node:http');
  const state = { url: '', status: 200, requests: 0, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  const server = createServer((_request, response) => {
    state.requests += 1;
    response.writeHead(state.status, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}

async function expectRejection<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await promise.then(() => undefined, (rejection: unknown) => rejection);
  expect(error).toBeInstanceOf(type);
  return error as T;
}

describe('OpenAIModelClient', () => {
  it('streams text, reporting each delta to onTextDelta', async () => {
    server.enqueue({ content: 'Hello from Hippo!' });
    const deltas: string[] = [];
    const response = await client().complete(request(hello), { role: 'worker', onTextDelta: (delta) => deltas.push(delta) });
    expect(response.message).toEqual({ role: 'assistant', content: 'Hello from Hippo!' });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello from Hippo!');
    expect(response.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('sends the request as given: stream, include_usage, prompt_cache_key, no empty tools key', async () => {
    await client().complete(request(hello), { role: 'worker' });
    const [recorded] = server.requests;
    expect(recorded?.body).toEqual({
      model: 'fake-model',
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
      prompt_cache_key: 'session-1',
    });
    expect(recorded?.headers['authorization']).toBe('Bearer test-key');
  });

  it('caps the answer as asked: max_tokens for compatible servers; max_completion_tokens and the least reasoning for OpenAI reasoning models', async () => {
    await client().complete({ ...request(hello), maxOutputTokens: 300, minimalReasoning: true }, { role: 'decider' });
    await client().complete({ ...request(hello), model: 'gpt-5-mini', maxOutputTokens: 300, minimalReasoning: true }, { role: 'decider' });
    await client().complete({ ...request(hello), model: 'o4-mini', minimalReasoning: true }, { role: 'decider' });
    await client().complete(request(hello), { role: 'worker' });
    const pick = (index: number) => {
      const body = server.requests[index]!.body;
      return [body['max_tokens'], body['max_completion_tokens'], body['reasoning_effort']];
    };
    expect([pick(0), pick(1), pick(2), pick(3)]).toEqual([[300, undefined, undefined], [undefined, 300, 'minimal'], [undefined, undefined, 'low'], [undefined, undefined, undefined]]);
  });

  it('sends tools when there are some', async () => {
    await client().complete(request(hello, [searchTool]), { role: 'worker' });
    expect(server.requests[0]?.body.tools).toEqual([searchTool]);
  });

  it('aggregates fragmented tool call deltas by index, with null content', async () => {
    server.enqueue({
      toolCalls: [
        { id: 'call_1', name: 'search', arguments: { query: 'otters and their habits', limit: 5 } },
        { id: 'call_2', name: 'read_note', arguments: '{"id":"n-42"}' },
      ],
    });
    const response = await client().complete(request(hello, [searchTool]), { role: 'worker' });
    expect(response.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"query":"otters and their habits","limit":5}' } },
        { id: 'call_2', type: 'function', function: { name: 'read_note', arguments: '{"id":"n-42"}' } },
      ],
    });
  });

  it('keeps text next to tool calls', async () => {
    server.enqueue({ content: 'Let me look.', toolCalls: [{ id: 'c', name: 'search', arguments: {} }] });
    const response = await client().complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('Let me look.');
    expect(response.message.tool_calls).toHaveLength(1);
  });

  it('keeps reasoning_content from the stream', async () => {
    server.enqueue({ reasoningContent: 'The user wants a greeting.', content: 'Hi!' });
    const response = await client().complete(request(hello), { role: 'worker' });
    expect(response.message).toEqual({ role: 'assistant', content: 'Hi!', reasoning_content: 'The user wants a greeting.' });
  });

  it('reports an image the API refuses as ImageRefusedError naming no image (OpenAI names none, R22), without retrying', async () => {
    const withImage: ChatMessage[] = [hello[0]!, { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }];
    const error = await expectRejection(client().complete(request(withImage), { role: 'worker' }), ImageRefusedError);
    expect(error.imageUrls).toEqual([]);
    expect(error.message).toContain('400 You uploaded an unsupported image. Please make sure your image is valid.');
    expect(server.requests).toHaveLength(1);
  });

  it('reports usage including cached tokens', async () => {
    server.enqueue({ content: 'x', usage: { promptTokens: 2048, cachedTokens: 1920, completionTokens: 7 } });
    const response = await client().complete(request(hello), { role: 'worker' });
    expect(response.usage).toEqual({ promptTokens: 2048, cachedTokens: 1920, completionTokens: 7 });
  });

  it('reports cached tokens of a repeated prefix under the same prompt_cache_key', async () => {
    const cacheServer = await startFakeModelServer({ simulateCache: true });
    try {
      const cached = new OpenAIModelClient({ apiKey: 'k', baseURL: cacheServer.url });
      const history: ChatMessage[] = [{ role: 'system', content: 'rules '.repeat(1200) }, { role: 'user', content: 'one' }];
      const first = await cached.complete(request(history), { role: 'worker' });
      expect(first.usage?.cachedTokens).toBe(0);
      const second = await cached.complete(request([...history, first.message, { role: 'user', content: 'two' }]), { role: 'worker' });
      expect(second.usage?.cachedTokens).toBeGreaterThanOrEqual(1024);
      expect((second.usage?.cachedTokens ?? 0) % 128).toBe(0);
      expect(cacheServer.requests.map((recorded) => recorded.body.prompt_cache_key)).toEqual(['session-1', 'session-1']);
    } finally {
      await cacheServer.close();
    }
  });

  it('returns null usage when the provider reports none', async () => {
    server.enqueue({ content: 'x', usage: null });
    expect((await client().complete(request(hello), { role: 'worker' })).usage).toBeNull();
  });

  it('retries 429s honouring retry-after, then succeeds', async () => {
    server.enqueue({ status: 429, retryAfter: 0 }, { status: 429, retryAfter: 0 }, { content: 'finally' });
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write: (line: Buffer, _encoding, done) => void (lines.push(line.toString()), done()) }));
    const response = await client({ baseDelayMs: 60_000, log }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('finally');
    expect(server.requests).toHaveLength(3);
    const retries = lines.map((line) => JSON.parse(line) as { msg: string; status?: number }).filter((entry) => entry.msg === 'model-call-retry');
    expect(retries.map((entry) => entry.status)).toEqual([429, 429]);
  });

  it('honours retry-after-ms', async () => {
    server.enqueue({ status: 503, retryAfterMs: 200 });
    const started = Date.now();
    await client({ baseDelayMs: 1 }).complete(request(hello), { role: 'worker' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(server.requests).toHaveLength(2);
  });

  it('gives up on a permanent 500 after maxRetries + 1 attempts with a retryable ModelError', async () => {
    server.respond(() => ({ status: 500, errorMessage: 'upstream exploded' }));
    const error = await expectRejection(client({ maxRetries: 2 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.retryable).toBe(true);
    expect(error.status).toBe(500);
    expect(error.message).toContain('upstream exploded');
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 400 and marks it not retryable', async () => {
    server.respond(() => ({ status: 400, errorMessage: 'bad messages' }));
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(400);
    expect(server.requests).toHaveLength(1);
  });

  it('maps a prompt over the window (400 context_length_exceeded) to ContextTooLongError, sent once', async () => {
    server.setContextWindow(10);
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ContextTooLongError);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain('maximum context length is 10 tokens');
    expect(server.requests).toHaveLength(1);
    expect(server.refused).toHaveLength(1);
  });

  it('maps a compatible server\'s "maximum context length" words without a code too, but not any other 400', async () => {
    server.enqueue({ status: 400, errorMessage: "This model's maximum context length is 8192 tokens" }, { status: 400, errorMessage: 'bad messages' });
    await expectRejection(client().complete(request(hello), { role: 'worker' }), ContextTooLongError);
    const other = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(other).not.toBeInstanceOf(ContextTooLongError);
  });

  it('retries a 408 but not a 404', async () => {
    server.enqueue({ status: 408 }, { status: 404 });
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.status).toBe(404);
    expect(server.requests).toHaveLength(2);
  });

  it('retries connection failures', async () => {
    const url = server.url;
    await server.close();
    const error = await expectRejection(
      new OpenAIModelClient({ apiKey: 'k', baseURL: url, maxRetries: 1, baseDelayMs: 1 }).complete(request(hello), { role: 'worker' }),
      ModelError,
    );
    expect(error.retryable).toBe(true);
    expect(error.status).toBeUndefined();
    server = await startFakeModelServer();
  });

  it('times out an attempt that gets no data, and retries it', async () => {
    server.enqueue({ hang: true });
    const response = await client({ timeoutMs: 100 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('times out a stalled stream and does not retry once text has streamed', async () => {
    server.enqueue({ content: 'partial answer here', hangAfterChunks: 3 });
    const deltas: string[] = [];
    const error = await expectRejection(
      client({ timeoutMs: 150 }).complete(request(hello), { role: 'worker', onTextDelta: (delta) => deltas.push(delta) }),
      ModelError,
    );
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('timed out');
    expect(deltas.join('')).toBe('partia'); // two 3-character chunks after the role chunk
    expect(server.requests).toHaveLength(1);
  });

  it('names the endpoint and what to check when nothing listens there', async () => {
    const url = server.url;
    await server.close();
    const error = await expectRejection(
      new OpenAIModelClient({ apiKey: 'k', baseURL: url, maxRetries: 0 }).complete(request(hello), { role: 'worker' }),
      ModelError,
    );
    const endpoint = new URL(url).host;
    expect(error.message).toBe(`cannot reach the model endpoint ${endpoint}/v1 (ECONNREFUSED): check OPENAI_BASE_URL and that the server is running`);
    server = await startFakeModelServer();
  });

  it('suggests /v1 when a base URL without it gets 404', async () => {
    const withoutV1 = server.url.replace(/\/v1$/, '');
    const error = await expectRejection(client({ baseURL: withoutV1 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.status).toBe(404);
    expect(error.message).toMatch(/^model endpoint 127\.0\.0\.1:\d+ answered 404 .*no route \/chat\/completions.*: OPENAI_BASE_URL probably needs \/v1 at the end/);
    expect(server.requests).toHaveLength(1);
  });

  it('points at MODEL, not /v1, when a base URL with /v1 gets 404', async () => {
    server.enqueue({ status: 404, errorMessage: 'The model `gpt-9` does not exist' });
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.message).toMatch(/answered 404 The model `gpt-9` does not exist: check MODEL and OPENAI_BASE_URL$/);
  });

  it('names a web page instead of quoting it: an HTML error page, and a web UI answering 200 at the base URL', async () => {
    const page = `<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>${'Welcome to the web UI. '.repeat(300)}</body></html>`;
    const web = await startWebPageServer(page);
    try {
      web.status = 404;
      const notFound = await expectRejection(client({ baseURL: web.url }).complete(request(hello), { role: 'worker' }), ModelError);
      expect(notFound.message).toBe(`model endpoint ${web.url.replace('http://', '')} answered 404 a web page instead of the API's JSON (is OPENAI_BASE_URL an API endpoint?): OPENAI_BASE_URL probably needs /v1 at the end (e.g. http://localhost:11434/v1)`);
      web.status = 200;
      const ui = await expectRejection(client({ baseURL: web.url }).complete(request(hello), { role: 'worker' }), ModelError);
      expect(ui.retryable).toBe(false);
      expect(ui.message).toBe(`model endpoint ${web.url.replace('http://', '')} answered a web page instead of the API's JSON: OPENAI_BASE_URL must be the API's base URL (usually ending in /v1), not a web UI`);
      expect(web.requests).toBe(2); // not retried: the same page would come back
      const check = await client({ baseURL: web.url }).checkEndpoint();
      expect(check).toEqual({ status: 'unreachable', detail: ui.message });
    } finally {
      await web.close();
    }
  });

  it('says to check OPENAI_API_KEY on a 401', async () => {
    const keyed = await startFakeModelServer({ apiKey: 'right-key' });
    try {
      const error = await expectRejection(
        new OpenAIModelClient({ apiKey: 'wrong-key', baseURL: keyed.url }).complete(request(hello), { role: 'worker' }),
        ModelError,
      );
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(/^model endpoint 127\.0\.0\.1:\d+\/v1 answered 401 Incorrect API key provided: check OPENAI_API_KEY$/);
    } finally {
      await keyed.close();
    }
  });

  it('names the attempt timeout setting when an attempt hears nothing', async () => {
    server.respond(() => ({ hang: true }));
    const error = await expectRejection(client({ timeoutMs: 100, maxRetries: 0 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.message).toMatch(/^model call timed out: 127\.0\.0\.1:\d+\/v1 sent nothing for 0 s \(MODEL_TIMEOUT_SECONDS\)$/);
  });

  it('fails a hung model after the total budget, whatever attempts are left', async () => {
    server.respond(() => ({ hang: true }));
    const started = Date.now();
    const error = await expectRejection(
      client({ timeoutMs: 200, maxRetries: 50, totalTimeoutMs: 700 }).complete(request(hello), { role: 'worker' }),
      ModelError,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^model endpoint 127\.0\.0\.1:\d+\/v1 gave no answer within 1 s \(MODEL_TOTAL_TIMEOUT_SECONDS\) over \d+ attempt\(s\); last: /);
    expect(server.requests.length).toBeLessThan(10); // not the 51 attempts allowed
  });

  it('gives up at once instead of backing off past the total budget', async () => {
    server.respond(() => ({ status: 503, errorMessage: 'overloaded' }));
    const error = await expectRejection(client({ baseDelayMs: 20_000, totalTimeoutMs: 1_000 }).complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.message).toMatch(/within 1 s \(MODEL_TOTAL_TIMEOUT_SECONDS\) over 1 attempt\(s\); last: model endpoint .* answered 503 overloaded$/);
    expect(server.requests).toHaveLength(1);
  });

  it('lets a stream that keeps producing run past the total budget', async () => {
    server.enqueue({ content: 'a slow but steady answer, chunk after chunk', chunkDelayMs: 40 });
    const started = Date.now();
    const response = await client({ totalTimeoutMs: 250 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('a slow but steady answer, chunk after chunk');
    expect(Date.now() - started).toBeGreaterThan(250);
  });

  it('restarts the silence at every chunk: a steady stream longer than one silence completes', async () => {
    // 13 chunks 40 ms apart: about 500 ms in all against 150 ms of allowed silence.
    server.enqueue({ content: 'abcdefghijklmnopqrstuvwxyz0123', chunkDelayMs: 40 });
    const response = await client({ timeoutMs: 150 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('abcdefghijklmnopqrstuvwxyz0123');
    expect(server.requests).toHaveLength(1);
  });

  it('after the first chunk waits a full silence, not what was left of the start budget', async () => {
    // Gaps of 300 ms: past the 250 ms start budget, well inside the 2 s silence.
    server.enqueue({ content: 'abcdef', chunkDelayMs: 300 });
    const response = await client({ timeoutMs: 2_000, totalTimeoutMs: 250 }).complete(request(hello), { role: 'worker' });
    expect(response.message.content).toBe('abcdef');
  });

  it('checks the endpoint: ok, unauthorized, unreachable (with the /v1 hint)', async () => {
    expect(await client().checkEndpoint()).toEqual({ status: 'ok', detail: expect.stringMatching(/answers$/) });
    const keyed = await startFakeModelServer({ apiKey: 'right-key' });
    try {
      const refused = await new OpenAIModelClient({ apiKey: 'wrong-key', baseURL: keyed.url }).checkEndpoint();
      expect(refused).toEqual({ status: 'unauthorized', detail: expect.stringMatching(/check OPENAI_API_KEY$/) });
    } finally {
      await keyed.close();
    }
    const withoutV1 = await client({ baseURL: server.url.replace(/\/v1$/, '') }).checkEndpoint();
    expect(withoutV1).toEqual({ status: 'unreachable', detail: expect.stringMatching(/needs \/v1 at the end/) });
    const gone = await startFakeModelServer();
    await gone.close();
    const closed = await client({ baseURL: gone.url }).checkEndpoint();
    expect(closed).toEqual({ status: 'unreachable', detail: expect.stringMatching(/^cannot reach the model endpoint 127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\)/) });
  });

  it('keeps the endpoint status current from real calls (ModelHealth)', async () => {
    const keyed = await startFakeModelServer({ apiKey: 'right-key' });
    try {
      const refused = new OpenAIModelClient({ apiKey: 'wrong-key', baseURL: keyed.url });
      const health = new ModelHealth(refused, { check: () => refused.checkEndpoint(), log: { info: () => undefined, warn: () => undefined } });
      expect(health.status).toBe('unknown');
      await expectRejection(health.complete(request(hello), { role: 'worker' }), ModelError);
      expect(health.status).toBe('unauthorized');
      const working = new ModelHealth(client(), { check: () => client().checkEndpoint(), log: { info: () => undefined, warn: () => undefined } });
      await working.complete(request(hello), { role: 'worker' });
      expect(working.status).toBe('ok');
      expect(await working.checkNow()).toBe('ok');
    } finally {
      await keyed.close();
    }
  });

  it('does not retry a stream cut after the first chunk', async () => {
    server.enqueue({ content: 'partial answer here', dropAfterChunks: 2 });
    const error = await expectRejection(client().complete(request(hello), { role: 'worker' }), ModelError);
    expect(error.retryable).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('throws CancelledError with the reason, quickly, when aborted while the server hangs', async () => {
    server.enqueue({ hang: true });
    const controller = new AbortController();
    const pending = client().complete(request(hello), { role: 'worker', signal: controller.signal });
    const [recorded] = await server.waitForRequests(1);
    const abortedAt = Date.now();
    controller.abort('pause');
    const error = await expectRejection(pending, CancelledError);
    expect(Date.now() - abortedAt).toBeLessThan(500);
    expect(error.reason).toBe('pause');
    await expect.poll(() => recorded?.respondedAt).toBeDefined();
  });

  it('throws CancelledError when aborted mid-stream rather than returning partial text', async () => {
    server.enqueue({ content: 'a long answer that keeps coming', chunkDelayMs: 20 });
    const controller = new AbortController();
    const error = await expectRejection(
      client().complete(request(hello), { role: 'worker', signal: controller.signal, onTextDelta: () => controller.abort('shutdown') }),
      CancelledError,
    );
    expect(error.reason).toBe('shutdown');
  });

  it('throws CancelledError when aborted during a backoff sleep', async () => {
    server.respond(() => ({ status: 500 }));
    const controller = new AbortController();
    const pending = client({ baseDelayMs: 60_000 }).complete(request(hello), { role: 'worker', signal: controller.signal });
    await server.waitForRequests(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort(new Error('deadline'));
    const error = await expectRejection(pending, CancelledError);
    expect(error.reason).toBe('deadline');
    expect(server.requests).toHaveLength(1);
  });

  it('does not call the server when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort('paused');
    await expectRejection(client().complete(request(hello), { role: 'worker', signal: controller.signal }), CancelledError);
    expect(server.requests).toHaveLength(0);
  });

  it('repeats an earlier assistant message (with reasoning_content) byte for byte', async () => {
    server.enqueue(
      { reasoningContent: 'Think: "quotes", unicode é 🦛, newline\n.', toolCalls: [{ id: 'call_9', name: 'search', arguments: { query: 'ü' } }] },
      { content: 'done' },
    );
    const model = client();
    const first = await model.complete(request(hello, [searchTool]), { role: 'worker' });
    const toolResult: ChatMessage = { role: 'tool', tool_call_id: 'call_9', content: 'no results' };
    await model.complete(request([...hello, first.message, toolResult], [searchTool]), { role: 'worker' });
    const rawBody = server.requests[1]?.rawBody ?? '';
    const serialized = JSON.stringify(first.message);
    expect(rawBody).toContain(serialized);
    expect(first.message.reasoning_content).toBe('Think: "quotes", unicode é 🦛, newline\n.');
    const sent = (JSON.parse(rawBody) as { messages: unknown[] }).messages[2];
    expect(JSON.stringify(sent)).toBe(serialized);
  });
});
