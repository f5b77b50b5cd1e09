// Traces (docs/operations.md): the agent as built for the service (src/build-agent.ts), with
// OTEL_EXPORTER_OTLP_ENDPOINT pointed at an OTLP/HTTP receiver on loopback, sends one run's spans:
// the run, its model calls in the GenAI conventions, a tool call, the summarizer and decider forks
// under the run, and the reset; nothing of the thread's text unless content capture is on.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAgent, type BuiltAgent } from '../../src/build-agent.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { scriptRoles } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  status: { code?: number };
  attributes: Record<string, string | number | boolean | string[]>;
  resource: Record<string, string | number | boolean | string[]>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values: OtlpValue[] } };
type OtlpAttribute = { key: string; value: OtlpValue };

function otlpValue(value: OtlpValue): string | number | boolean | string[] {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  return (value.arrayValue?.values ?? []).map((item) => String(otlpValue(item)));
}

function attributes(list: OtlpAttribute[] | undefined): ReceivedSpan['attributes'] {
  return Object.fromEntries((list ?? []).map((attribute) => [attribute.key, otlpValue(attribute.value)]));
}

/** An OTLP/HTTP (JSON) trace receiver on loopback: what a collector would be sent. */
async function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; bodies: string[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      if (request.url === '/v1/traces' && request.headers['content-type']?.includes('json')) {
        const parsed = JSON.parse(body) as { resourceSpans: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans: Array<{ spans: Array<Omit<ReceivedSpan, 'attributes' | 'resource'> & { attributes?: OtlpAttribute[] }> }> }> };
        for (const resourceSpans of parsed.resourceSpans) {
          const resource = attributes(resourceSpans.resource?.attributes);
          for (const scope of resourceSpans.scopeSpans) for (const span of scope.spans) spans.push({ ...span, parentSpanId: span.parentSpanId ?? '', attributes: attributes(span.attributes), resource });
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function build(environment: Record<string, string>): Promise<BuiltAgent> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-traces-'));
  bed.onCleanup(() => rm(dataDir, { recursive: true, force: true }));
  const parsed = parseConfig({ MODEL: 'fake-model', OPENAI_BASE_URL: bed.model.url, OPENAI_API_KEY: 'test-key', MODEL_CONTEXT_WINDOW: '20000', TOOLS: 'memory', DATA_DIR: dataDir });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  const built = await buildAgent({ config: parsed.config, database: bed.database, log: createLogger('silent'), environment });
  const close = built.close;
  let closed = false;
  const closeOnce = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await built.agent.stop(1_000);
    await close();
  };
  bed.onCleanup(closeOnce);
  return { ...built, close: closeOnce };
}

const SECRET = 'ACCOUNT-7731-HUSH';

/** Worker: a memory_search (the secret in its query), then an answer; the decider resets; then one more answer. */
function scriptRunWithReset(): void {
  scriptRoles(bed.model, {
    worker: [
      { toolCalls: [{ id: 'search1', name: 'memory_search', arguments: { query: `billing ${SECRET}` } }], usage: { promptTokens: 1_400, cachedTokens: 1_024, completionTokens: 11 } },
      { content: `first part done for ${SECRET}`, usage: { promptTokens: 1_700, cachedTokens: 1_280, completionTokens: 13 } },
      { content: 'continued in the new context', usage: { promptTokens: 900, cachedTokens: 0, completionTokens: 6 } },
    ],
    summarizer: [{ content: 'noted', usage: { promptTokens: 1_500, cachedTokens: 1_400, completionTokens: 4 } }],
    decider: [{ content: 'Most of this is finished work.\nRESET_CONTEXT', usage: { promptTokens: 1_510, cachedTokens: 1_400, completionTokens: 9 } }],
  });
}

async function runWithReset(built: BuiltAgent): Promise<string> {
  scriptRunWithReset();
  const thread = newThread();
  const { session } = await built.agent.submit(personMessage(thread, `migrate billing for ${SECRET}`), { startSession: true });
  const runner = await built.agent.runner(session!.id);
  await until(() => runner.context.segment.ordinal === 2, 20_000, 'the reset');
  await runner.whenIdle();
  await built.agent.submit(personMessage(thread, 'and now?'), { startSession: false });
  await until(async () => (await bed.database.prisma.modelCall.count({ where: { sessionId: session!.id, role: 'worker' } })) === 3, 20_000, 'the third worker call');
  await runner.whenIdle();
  await runner.memory.settle();
  return session!.id;
}

describe('traces (OTEL_*)', () => {
  it('sends a run with a tool call, a summarizer, a decider and a reset: parents, GenAI attributes, reported tokens, no thread text', async () => {
    const receiver = await startReceiver();
    bed.onCleanup(() => receiver.close());
    const built = await build({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'hippo-under-test' });
    expect(built.traces).toBeDefined();
    const sessionId = await runWithReset(built);
    await built.close(); // sends what is buffered
    const { spans } = receiver;
    const named = (name: string) => spans.filter((span) => span.name === name);
    const runs = named('invoke_agent hippo');
    expect(runs).toHaveLength(2);
    const [first, second] = runs as [ReceivedSpan, ReceivedSpan];
    expect(first.resource['service.name']).toBe('hippo-under-test');
    expect(first.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'hippo.session.id': sessionId, 'hippo.platform': 'console', 'hippo.run.asked_by': 'ada', 'hippo.run.end_reason': 'idle' });
    expect(first.parentSpanId).toBe('');
    // Chat spans: the worker's under its run, each fork's under the fork, the forks under the first run.
    const chats = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats.map((span) => span.attributes['hippo.role']).sort()).toEqual(['decider', 'summarizer', 'worker', 'worker', 'worker']);
    for (const chat of chats) {
      expect(chat.name).toBe('chat fake-model');
      expect(chat.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'fake-model', 'gen_ai.conversation.id': sessionId });
    }
    const workerChats = chats.filter((span) => span.attributes['hippo.role'] === 'worker');
    expect(workerChats.map((span) => [span.parentSpanId, span.attributes['gen_ai.usage.input_tokens'], span.attributes['gen_ai.usage.cache_read.input_tokens'], span.attributes['gen_ai.usage.output_tokens']])).toEqual([
      [first.spanId, 1_400, 1_024, 11], [first.spanId, 1_700, 1_280, 13], [second.spanId, 900, 0, 6],
    ]);
    const [summarizer] = named('invoke_agent summarizer');
    const [decider] = named('invoke_agent decider');
    expect(summarizer?.parentSpanId).toBe(first.spanId);
    expect(decider?.parentSpanId).toBe(first.spanId);
    expect(summarizer?.attributes).toMatchObject({ 'hippo.role': 'summarizer', 'hippo.memory_run.status': 'succeeded', 'hippo.memory_run.round': 1 });
    expect(decider?.attributes).toMatchObject({ 'hippo.role': 'decider', 'hippo.memory_run.status': 'succeeded', 'hippo.decider.decision': 'reset' });
    const forkChat = (role: string) => chats.find((span) => span.attributes['hippo.role'] === role);
    expect(forkChat('summarizer')).toMatchObject({ parentSpanId: summarizer?.spanId, attributes: expect.objectContaining({ 'gen_ai.usage.input_tokens': 1_500, 'gen_ai.usage.cache_read.input_tokens': 1_400, 'gen_ai.usage.output_tokens': 4 }) });
    expect(forkChat('decider')).toMatchObject({ parentSpanId: decider?.spanId, attributes: expect.objectContaining({ 'gen_ai.usage.input_tokens': 1_510, 'gen_ai.usage.output_tokens': 9 }) });
    const [tool] = named('execute_tool memory_search');
    expect(tool).toMatchObject({ parentSpanId: first.spanId, attributes: expect.objectContaining({ 'gen_ai.tool.name': 'memory_search', 'gen_ai.tool.call.id': 'search1', 'hippo.tool.outcome': 'ok' }) });
    const [reset] = named('context_reset');
    const stored = await bed.database.prisma.segment.findFirstOrThrow({ where: { sessionId, ordinal: 2 } });
    expect(reset?.parentSpanId).toBe(first.spanId);
    expect(reset?.attributes).toMatchObject({ 'hippo.reset.reason': 'requested', 'hippo.reset.tokens_after': stored.startTokens, 'hippo.reset.messages_carried': stored.carriedMessages, 'hippo.segment.ordinal': 2 });
    expect(Number(reset?.attributes['hippo.reset.tokens_before'])).toBeGreaterThan(0);
    // One trace for the first run and everything it forked; nothing of the thread's text anywhere.
    expect(new Set([first, ...chats.slice(0, 2), summarizer, decider, tool, reset].map((span) => span?.traceId)).size).toBe(1);
    expect(receiver.bodies.join('\n')).not.toContain(SECRET);
    expect(receiver.bodies.join('\n')).not.toContain('migrate billing');
    // The session is quiet: no run's context is left on its row.
    expect((await bed.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).traceContext).toBeNull();
  }, 60_000);

  it('continues the trace stored on the session by a run another process did not finish', async () => {
    const receiver = await startReceiver();
    bed.onCleanup(() => receiver.close());
    const built = await build({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces` });
    const thread = newThread();
    const { session } = await built.stores.sessions.open(thread, { title: 't', scope: 'channel' });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    await bed.database.prisma.session.update({ where: { id: session.id }, data: { traceContext: `00-${traceId}-${parent}-01` } });
    scriptRoles(bed.model, { worker: [{ content: 'picked up where it stopped' }] });
    await built.agent.submit(personMessage(thread, 'go on'), { startSession: false });
    const runner = await built.agent.runner(session.id);
    await until(async () => (await bed.database.prisma.modelCall.count({ where: { sessionId: session.id } })) === 1, 20_000, 'the worker call');
    await runner.whenIdle();
    await built.close();
    const [run] = receiver.spans.filter((span) => span.name === 'invoke_agent hippo');
    expect(run).toMatchObject({ traceId, parentSpanId: parent, attributes: expect.objectContaining({ 'hippo.run.continued': true }) });
    expect(receiver.spans.find((span) => span.attributes['gen_ai.operation.name'] === 'chat')).toMatchObject({ traceId, parentSpanId: run?.spanId });
    expect(receiver.spans[0]?.resource['service.name']).toBe('hippo');
  }, 60_000);

  it('puts arguments, results and messages in spans only with content capture on', async () => {
    const receiver = await startReceiver();
    bed.onCleanup(() => receiver.close());
    const built = await build({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' });
    await runWithReset(built);
    await built.close();
    const [tool] = receiver.spans.filter((span) => span.name === 'execute_tool memory_search');
    expect(String(tool?.attributes['gen_ai.tool.call.arguments'])).toContain(SECRET);
    expect(tool?.attributes['gen_ai.tool.call.result']).toEqual(expect.any(String));
    expect(receiver.spans.some((span) => String(span.attributes['gen_ai.input.messages'] ?? '').includes(`migrate billing for ${SECRET}`))).toBe(true);
  }, 60_000);

  it('creates no tracer, exporter or wrapper without OTEL_*, and none when the SDK is disabled', async () => {
    const receiver = await startReceiver();
    bed.onCleanup(() => receiver.close());
    expect((await build({})).traces).toBeUndefined();
    await expect(build({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318' })).rejects.toThrow('config: OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL (e.g. http://otel-collector:4318)');
    expect((await build({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' })).traces).toBeUndefined();
    const built = await build({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_EXPORTER: 'none' });
    expect(built.traces).toBeUndefined();
    scriptRoles(bed.model, { worker: [{ content: 'hello' }] });
    const { session } = await built.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    await until(async () => (await bed.database.prisma.modelCall.count({ where: { sessionId: session!.id } })) === 1, 20_000, 'the worker call');
    await (await built.agent.runner(session!.id)).whenIdle();
    await built.close();
    expect(receiver.bodies).toEqual([]);
    expect((await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).traceContext).toBeNull();
  }, 60_000);
});
