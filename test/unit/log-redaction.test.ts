// Secrets in log text: a provider's error may quote the key it was sent (a proxy that echoes the
// request), and the line must not carry it. The real SDKs against a server that echoes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, knownSecrets, redactSecrets } from '../../src/log.js';

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  // A proxy that answers 401 with the credentials it received, as some do.
  server = createServer((request, response) => {
    request.resume();
    response.writeHead(401, { 'content-type': 'application/json' });
    const echoed = `authorization: ${request.headers['authorization'] ?? ''}; x-api-key: ${request.headers['x-api-key'] ?? ''}; url ${request.url ?? ''}?api_key=${String(request.headers['x-api-key'] ?? '')}`;
    response.end(JSON.stringify({ error: { type: 'authentication_error', message: `rejected (${echoed})` } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** A logger writing into `lines`, knowing `secrets`. */
function capture(secrets: readonly string[] = []): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger('info', { write: (line: string) => void lines.push(line) }, { secrets }), lines };
}

/** Logs `error` the ways the code does: the error itself, its text as a field, its text in the message. */
function logEveryWay(log: ReturnType<typeof createLogger>, error: unknown): void {
  log.error({ err: error }, 'model-call-failed');
  log.warn({ err: String(error), error: error instanceof Error ? error.message : '' }, 'model-endpoint-unauthorized');
  log.warn(`model-endpoint-unauthorized: ${error instanceof Error ? error.message : String(error)}`);
}

describe('provider error text in the log', () => {
  it('an OpenAI key echoed by the endpoint is replaced, in the error, its text and the message', async () => {
    const key = 'sk-proj-Echoed4711abcdefghijkl';
    const client = new OpenAI({ apiKey: key, baseURL: `${baseUrl}/v1`, maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    expect(String(error)).toContain(key);
    // Without knowing the key: its shape (sk-…, Bearer …) is enough.
    const { log, lines } = capture();
    logEveryWay(log, error);
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).not.toContain('Echoed4711');
      expect(line).toContain('[redacted]');
      expect(() => JSON.parse(line) as unknown).not.toThrow();
    }
  });

  it('an Anthropic key of any shape is replaced once the config names it, x-api-key values by their name', async () => {
    const key = 'proxy-issued-Echoed4711-key';
    const client = new Anthropic({ apiKey: key, baseURL: baseUrl, maxRetries: 0 });
    const error = await client.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((caught: unknown) => caught);
    expect(String(error)).toContain(key);
    const known = capture(knownSecrets({ ANTHROPIC_API_KEY: key, LOG_LEVEL: 'info', MODEL: 'claude-sonnet-4-5' }));
    logEveryWay(known.log, error);
    for (const line of known.lines) expect(line).not.toContain('Echoed4711');
    // Not named in the config: the value after x-api-key and api_key still goes.
    const unnamed = capture();
    logEveryWay(unnamed.log, error);
    for (const line of unnamed.lines) expect(line).not.toContain('Echoed4711');
  });
});

describe('redactSecrets', () => {
  it('replaces keys, tokens and header values, and leaves ordinary text alone', () => {
    expect(redactSecrets('Incorrect API key provided: sk-ant-api03-abcdEFGH1234. Try again')).toBe('Incorrect API key provided: [redacted]. Try again');
    expect(redactSecrets('Authorization: Bearer eyJhbGciOi.J9xyz_-~+/=')).toBe('Authorization: Bearer [redacted]');
    expect(redactSecrets('{"headers":{"x-api-key":"abc123456789"}}')).toBe('{"headers":{"x-api-key":"[redacted]"}}');
    expect(redactSecrets('{\\"X-Api-Key\\": \\"abc123456789\\"}')).toBe('{\\"X-Api-Key\\": \\"[redacted]\\"}');
    expect(redactSecrets('GET /v1?api_key=abc12345&model=x and OPENAI_API_KEY=abc123456789')).toBe('GET /v1?api_key=[redacted]&model=x and OPENAI_API_KEY=[redacted]');
    expect(redactSecrets('token xoxb-1234-5678-abcdefgh posted')).toBe('token [redacted] posted');
    expect(redactSecrets('a db at postgres://u:pw-4711-value@db/x', ['pw-4711-value'])).toBe('a db at postgres://u:[redacted]@db/x');
    const ordinary = 'task-runner risk-assessment: bearer of news; OPENAI_API_KEY is required; the api key, the disk-space, sk-short; answered 401 authentication_error: invalid x-api-key: check ANTHROPIC_API_KEY; x-api-key: required; api_key=v2';
    expect(redactSecrets(ordinary, ['short'])).toBe(ordinary);
  });

  it('knownSecrets takes the secret settings only, long enough to be told from words', () => {
    expect(knownSecrets({ OPENAI_API_KEY: 'key-value-1234', SLACK_BOT_TOKEN: 'xoxb-x', MODEL: 'gpt-4o-mini-long-name', DATABASE_URL: 'postgres://u:p@h/d' })).toEqual(['key-value-1234', 'postgres://u:p@h/d']);
  });

  it('stays linear on 2 MiB of the worst text for each pattern', () => {
    const size = 2 * 1024 * 1024;
    for (const unit of ['sk-', 'x-api-key ', 'api_key: ', 'Bearer ', 'xoxb-', 'x-api-key:"', 'sk-aaaaaaa ', 'x-api-key:', 'api_key=', 'x-api-key: a ']) {
      const text = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
      const redacted = redactSecrets(text, ['never-there-4711']);
      expect(redacted.length).toBeGreaterThan(0);
    }
  });
});
