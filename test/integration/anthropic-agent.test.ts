// The agent (worker, summarizer and decider forks) on the Anthropic Messages API: the real SDK
// against the wire-level fake, whose prompt cache honours only `cache_control` marks. Forks must
// read the worker's context from the cache and be its request plus one message at the wire (R1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SessionRecord } from '../../src/core/store.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { spendOf } from '../../src/core/spend.js';
import { startFakeAnthropicServer, type AnthropicRecordedRequest, type FakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import type { FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { roleOf } from '../support/model-script.js';

const echo = defineTool({ name: 'echo', description: 'Echoes text.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo: ${text}` }) as AnyTool;

let database: TestDatabase;
let model: FakeAnthropicServer;
let harness: AgentHarness;
let session: SessionRecord;

// One task, run once; every test reads what it sent and what was recorded.
beforeAll(async () => {
  database = await createTestDatabase();
  // Like Claude Sonnet: nothing under 1,024 tokens is cached.
  model = await startFakeAnthropicServer({ minCacheTokens: 1_024, chunkSize: 64 });
  harness = await start();
  session = await runTask(harness);
}, 120_000);
afterAll(async () => {
  await harness?.close();
  await model?.close();
  await database?.drop();
});

async function start(): Promise<AgentHarness> {
  return createAgentHarness({
    database,
    model: model as unknown as FakeModelServer,
    provider: 'anthropic',
    tools: [echo],
    // The product's fork timing: a fork waits for the worker's next call to start, so the cache
    // holds the worker's newest step when the fork is sent.
    settings: { model: 'claude-sonnet-4-5', contextWindow: 20_000, forkAfterWorkerPrefillMs: 10_000, prices: null },
  });
}

/**
 * The worker calls echo with a sizeable text (each step crosses a 3% memory step), then twelve
 * echos at once (more blocks than the API looks back over from a mark), then answers.
 */
function scriptTask(): void {
  let worker = 0;
  model.respond((body) => {
    const role = roleOf(body);
    if (role === 'decider') return { content: 'The context is all still relevant.\nKEEP_CONTEXT' };
    if (role === 'summarizer') {
      const wrote = body.messages.at(-1)?.['role'] === 'tool';
      return wrote ? { content: 'MAIN.md updated.' } : { toolCalls: [{ name: 'memory_append', arguments: { path: 'MAIN.md', text: '- The migration runs in two echo steps.' } }] };
    }
    worker += 1;
    if (worker === 1) return { content: 'Step 1.', toolCalls: [{ name: 'echo', arguments: { text: 'log line 1 '.repeat(120) } }] };
    if (worker === 2) return { content: 'Step 2, in twelve parts.', toolCalls: Array.from({ length: 12 }, (_, part) => ({ name: 'echo', arguments: { text: `part ${part} `.repeat(10) } })) };
    return { content: 'Both steps are done.' };
  });
}

const isFirstForkCall = (request: AnthropicRecordedRequest) => String(request.body.messages.at(-1)?.['content']).startsWith('<role-change');

/** The index of a request's last message that is an answer or tool results (-1: none). */
function lastNonUserMessage(request: AnthropicRecordedRequest): number {
  return (request.wire.messages ?? []).findLastIndex((message) => message.role === 'assistant' || (Array.isArray(message.content) && message.content.some((block) => block.type === 'tool_result')));
}
const ofRole = (role: string) => model.requests.filter((request) => request.path === '/v1/messages' && roleOf(request.body) === role);

async function runTask(h: AgentHarness): Promise<SessionRecord> {
  scriptTask();
  const { session } = await h.agent.submit(personMessage(newThread(), 'Run the two-step migration.'), { startSession: true });
  const runner = await h.agent.runner(session!.id);
  await runner.whenIdle();
  await runner.memory.settle();
  return session!;
}

describe('the agent on the Anthropic Messages API', () => {
  it('gives every fork the worker\'s context from the cache: all but its trailing user messages (marker, instruction)', async () => {
    const forks = [...ofRole('summarizer'), ...ofRole('decider')].filter(isFirstForkCall);
    expect(ofRole('summarizer').filter(isFirstForkCall).length).toBeGreaterThanOrEqual(1);
    expect(ofRole('decider').length).toBeGreaterThanOrEqual(1);
    for (const fork of forks) {
      const { read, written, promptTokens, messageEnds } = fork.cache!;
      // Read up to the worker's last tool result or answer: the worker's context at the fork
      // point, less the marker (for a decider). A summarizer writes the rest, so its own next
      // call reads its instruction; a decider writes nothing (its instruction is plain input).
      expect(read, `fork ${fork.index}`).toBe(messageEnds[lastNonUserMessage(fork)]);
      expect(read + written).toBe(roleOf(fork.body) === 'summarizer' ? promptTokens : read);
      expect(read).toBeGreaterThan(promptTokens / 2);
    }
    // R14: the usage rows hold what the API reported, cache reads and writes included.
    const calls = await database.prisma.modelCall.findMany({ where: { sessionId: session.id }, orderBy: { id: 'asc' } });
    const forkRows = calls.filter((call) => call.role !== 'worker');
    expect(forkRows.length).toBeGreaterThanOrEqual(forks.length);
    for (const row of forkRows) {
      expect(row.cachedTokens).toBeGreaterThan(0);
      expect(row.cacheWriteTokens).not.toBeNull();
    }
    const reported = model.requests.filter((request) => request.cache).map((request) => request.cache!.read).sort((a, b) => a - b);
    expect(calls.map((call) => call.cachedTokens).sort((a, b) => a - b)).toEqual(reported);
    // Forks cost little: billed at Claude's prices, cache writes included.
    const spend = spendOf(await harness.stores.usage.totals({ sessionId: session.id }), harness.deps.settings);
    expect(spend.priced).toBe(true);
    expect(spend.byRole.summarizer + spend.byRole.decider).toBeLessThan(spend.byRole.worker);
  });

  it('writes nothing to the cache for a decider, whose instruction no later call reads', () => {
    const deciders = ofRole('decider');
    expect(deciders.length).toBeGreaterThanOrEqual(1);
    for (const decider of deciders) {
      expect(decider.cache!.written, `decider ${decider.index}`).toBe(0);
      expect(decider.wire.messages?.at(-1)?.content).toEqual([{ type: 'text', text: expect.stringMatching(/^<role-change role="decider"/) }]);
    }
  });

  it('has a summarizer\'s next call read all its first call sent', () => {
    const [first, second] = ofRole('summarizer');
    expect(isFirstForkCall(first!)).toBe(true);
    expect(second!.cache!.read).toBe(first!.cache!.promptTokens);
  });

  it('has each worker call read everything the previous one sent', () => {
    const workers = ofRole('worker');
    expect(workers.length).toBe(3);
    for (let index = 1; index < workers.length; index += 1) {
      const previous = workers[index - 1]!;
      // All the previous call sent up to its last answer or tool results (its first call: the
      // memory documents); a marker after them is plain input. Also after twelve tool calls,
      // whose 25 blocks the API would not look back over from this call's last mark.
      const sent = previous.cache!.messageEnds[Math.max(0, lastNonUserMessage(previous))]!;
      expect(workers[index]!.cache!.read, `worker call ${index + 1}`).toBeGreaterThanOrEqual(sent);
    }
  });

  it('sends the decider the worker\'s next request byte for byte plus one message, and the summarizer its prefix (R1 at the wire)', () => {
    const decider = ofRole('decider').find(isFirstForkCall)!;
    const summarizer = ofRole('summarizer').find(isFirstForkCall)!;
    const deciderPrefix = { ...decider.wire, messages: decider.wire.messages?.slice(0, -1) };
    // The worker request whose messages the decider extends (the one after the marker).
    const worker = ofRole('worker').find((request) => JSON.stringify(request.wire.messages) === JSON.stringify(deciderPrefix.messages));
    expect(worker, 'a worker request equal to the decider\'s prefix').toBeDefined();
    // Everything the cache is keyed on is the worker's, byte for byte; only the answer's cap is the
    // decider's own (a short verdict: R5), and max_tokens is no part of the cached prompt.
    expect(decider.wire.max_tokens).toBe(1024);
    expect(JSON.stringify({ ...deciderPrefix, max_tokens: worker!.wire.max_tokens })).toBe(JSON.stringify(worker!.wire));
    // The summarizer was forked before the marker: its prefix is that request less the marker.
    const summarizerPrefix = summarizer.wire.messages?.slice(0, -1) ?? [];
    expect(JSON.stringify(summarizerPrefix)).toBe(JSON.stringify(worker!.wire.messages?.slice(0, summarizerPrefix.length)));
    expect(worker!.wire.messages?.[summarizerPrefix.length]).toEqual({ role: 'user', content: [{ type: 'text', text: '<memory-checkpoint n="1"/>' }] });
    for (const field of ['model', 'max_tokens', 'system', 'tools', 'stream'] as const) expect(summarizer.wire[field]).toEqual(worker!.wire[field]);
  });
});
