// Claude's prompt cache across resets and sessions: the system block (with the tools before it) is
// the same for every segment and every session of a platform, so the first request of a new
// segment or a new session reads it from the cache, however much later it is sent. The real SDK
// against the wire-level fake, whose cache honours only `cache_control` marks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { startFakeAnthropicServer, type AnthropicRecordedRequest, type FakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import type { FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { roleOf } from '../support/model-script.js';

const echo = defineTool({ name: 'echo', description: 'Echoes text.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo: ${text}` }) as AnyTool;

let database: TestDatabase;
let model: FakeAnthropicServer;
let harness: AgentHarness;
// The agent's clock: each segment starts an hour after the previous one.
let now = new Date('2026-12-07T09:00:00Z');

beforeAll(async () => {
  database = await createTestDatabase();
  // Like Claude Sonnet: nothing under 1,024 tokens is cached.
  model = await startFakeAnthropicServer({ minCacheTokens: 1_024, chunkSize: 64 });
  harness = await createAgentHarness({
    database,
    model: model as unknown as FakeModelServer,
    provider: 'anthropic',
    tools: [echo],
    settings: { model: 'claude-sonnet-4-5', contextWindow: 200_000, prices: null },
    clock: { now: () => now },
  });
  model.respond((body) => {
    const role = roleOf(body);
    if (role === 'decider') return { content: 'Still relevant.\nKEEP_CONTEXT' };
    if (role === 'summarizer') return { content: 'no change' };
    return { content: `Answer ${body.messages.length}.` };
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await model?.close();
  await database?.drop();
});

const workerRequests = () => model.requests.filter((request) => request.path === '/v1/messages' && roleOf(request.body) === 'worker');

/** Sends `text` in `thread` and returns the worker requests it caused. */
async function ask(thread: ReturnType<typeof newThread>, text: string, startSession: boolean): Promise<{ sessionId: string; requests: AnthropicRecordedRequest[] }> {
  const before = workerRequests().length;
  const { session } = await harness.agent.submit(personMessage(thread, text), { startSession });
  const runner = await harness.agent.runner(session!.id);
  await runner.whenIdle();
  await runner.memory.settle();
  return { sessionId: session!.id, requests: workerRequests().slice(before) };
}

/** Fake tokens up to the end of the system block: the request's first cache mark. */
function systemEnd(request: AnthropicRecordedRequest): number {
  const system = request.wire.system;
  expect(Array.isArray(system) ? system.at(-1)?.cache_control : undefined).toEqual({ type: 'ephemeral' });
  return request.cache!.breakpoints[0]!;
}

describe('Claude\'s prompt cache across resets and sessions', () => {
  const channel = `c-cache-${Date.now()}`;
  const thread = newThread(channel);
  let first: AnthropicRecordedRequest;

  it('writes the tools and system block once, on the first request of a session', async () => {
    const { requests } = await ask(thread, 'Hello, what can you do?', true);
    first = requests[0]!;
    expect(systemEnd(first)).toBeGreaterThan(1_024);
    expect(first.cache!.read).toBe(0);
    expect(first.cache!.written).toBeGreaterThanOrEqual(systemEnd(first));
  });

  it('reads the system block from the cache on the first request after a person\'s reset, an hour later', async () => {
    const { sessionId } = await ask(thread, 'Something first.', false);
    now = new Date(now.getTime() + 60 * 60_000);
    expect(await harness.agent.reset(sessionId)).toBe(true);
    await harness.waitForEvent('context-reset', (event) => event.session.id === sessionId);
    const { requests } = await ask(thread, 'And now?', false);
    const afterReset = requests[0]!;
    // A new segment: fresh init messages, whose memory documents name the time it started.
    expect(String(afterReset.body.messages[1]?.['content'])).toMatch(/^<memory-documents started="2026-12-07 10:00 UTC"/);
    expect(String(first.body.messages[1]?.['content'])).toMatch(/^<memory-documents started="2026-12-07 09:00 UTC"/);
    expect(afterReset.wire.system).toEqual(first.wire.system);
    expect(afterReset.cache!.read).toBeGreaterThanOrEqual(systemEnd(afterReset));
    expect(afterReset.cache!.written).toBeLessThanOrEqual(afterReset.cache!.promptTokens - systemEnd(afterReset));
  });

  it('reads it too on the first request of another session of the same channel, a day later', async () => {
    now = new Date(now.getTime() + 24 * 60 * 60_000);
    const { requests } = await ask(newThread(channel), 'A new question in a new thread.', true);
    const other = requests[0]!;
    expect(other.wire.system).toEqual(first.wire.system);
    expect(other.cache!.read).toBeGreaterThanOrEqual(systemEnd(other));
    expect(other.cache!.written).toBeLessThanOrEqual(other.cache!.promptTokens - systemEnd(other));
  });
});
