import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { at, conversation, gate, requestsOf, scriptRoles, shape } from '../support/model-script.js';
import { until } from '../support/wait.js';

/** A tool that waits until the test opens its gate. */
function gatedTool() {
  let open: () => void = () => undefined;
  let started: () => void = () => undefined;
  const state = {
    gate: new Promise<void>((resolve) => (open = resolve)),
    started: new Promise<void>((resolve) => (started = resolve)),
    open: () => open(),
    calls: 0,
  };
  const tool: AnyTool = defineTool({
    name: 'slow_step',
    description: 'Waits for the test.',
    input: z.object({ label: z.string() }),
    execute: async ({ label }) => {
      state.calls += 1;
      started();
      await state.gate;
      return `done ${label}`;
    },
  }) as AnyTool;
  return { tool, state };
}

const echoTool = defineTool({
  name: 'echo',
  description: 'Echoes text.',
  input: z.object({ text: z.string() }),
  execute: async ({ text }) => `echo: ${text}`,
}) as AnyTool;

const bed = useTestBed();

describe('worker loop', () => {
  it('appends a steer message after all results of the tool batch and before the next model call', async () => {
    const { tool, state } = gatedTool();
    const harness = await bed.harness({ tools: [tool, echoTool] });
    bed.model.enqueue(
      { toolCalls: [{ id: 'call_a', name: 'slow_step', arguments: { label: 'a' } }, { id: 'call_b', name: 'echo', arguments: { text: 'b' } }] },
      { content: 'all done' },
    );
    const thread = newThread();
    await harness.agent.submit(personMessage(thread, 'start the job'), { startSession: true });
    await state.started;
    await harness.agent.submit(personMessage(thread, 'also check the logs', 'Grace'), { startSession: false });
    state.open();
    await harness.waitForEvent('run-end');
    const second = bed.model.requests[1];
    expect(second).toBeDefined();
    expect(shape(conversation(second!.body))).toEqual([
      'user:start the job',
      'assistant→[call_a,call_b]',
      'tool(call_a)',
      'tool(call_b)',
      'user:also check the logs',
    ]);
    const steer = conversation(second!.body).at(-1)?.['content'];
    expect(steer).toBe('Grace wrote:\n> also check the logs');
  });

  it('handles two steer messages sent while busy in the one running drive, in order', async () => {
    const { tool, state } = gatedTool();
    const harness = await bed.harness({ tools: [tool] });
    bed.model.enqueue({ toolCalls: [{ id: 'call_1', name: 'slow_step', arguments: { label: 'x' } }] }, { content: 'first answer' }, { content: 'second answer' });
    const thread = newThread();
    await harness.agent.submit(personMessage(thread, 'go'), { startSession: true });
    await state.started;
    await harness.agent.submit(personMessage(thread, 'one'), { startSession: false });
    await harness.agent.submit(personMessage(thread, 'two'), { startSession: false });
    state.open();
    await harness.waitForEvent('run-end');
    const runner = await harness.agent.runner((await harness.agent.findSession(thread))!.id);
    await runner.whenIdle();
    expect(harness.events.filter((event) => event.type === 'run-start')).toHaveLength(1);
    expect(shape(conversation(bed.model.requests[1]!.body)).slice(-2)).toEqual(['user:one', 'user:two']);
    const taken = harness.events.flatMap((event) => (event.type === 'steer-taken' ? event.steers.map((steer) => steer.text) : []));
    expect(taken).toEqual(['go', 'one', 'two']);
  });

  it('pauses after the running tool batch; resume continues without a new message', async () => {
    const { tool, state } = gatedTool();
    const harness = await bed.harness({ tools: [tool] });
    bed.model.enqueue({ toolCalls: [{ id: 'call_p', name: 'slow_step', arguments: { label: 'p' } }] }, { content: 'finished after resume' });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'work'), { startSession: true });
    await state.started;
    await harness.agent.pause(session!.id);
    state.open();
    await harness.waitForEvent('paused');
    const end = await harness.waitForEvent('run-end');
    expect(end.reason).toBe('paused');
    expect(bed.model.requests).toHaveLength(1);
    const runner = await harness.agent.runner(session!.id);
    expect(runner.context.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_p' });
    expect((await harness.stores.sessions.get(session!.id))?.paused).toBe(true);

    await harness.agent.resume(session!.id);
    await harness.waitForEvent('answer', (event) => event.text === 'finished after resume');
    expect(bed.model.requests).toHaveLength(2);
    expect(harness.events.filter((event) => event.type === 'resumed')).toHaveLength(1);
  });

  it('resumes a paused session when a steer message arrives', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'first' }, { content: 'second' });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'hello'), { startSession: true });
    await harness.waitForEvent('answer');
    await (await harness.agent.runner(session!.id)).whenIdle();
    await harness.agent.pause(session!.id);
    expect((await harness.agent.status(session!.id)).state).toBe('paused');
    await harness.agent.submit(personMessage(thread, 'continue please'), { startSession: false });
    await harness.waitForEvent('answer', (event) => event.text === 'second');
    expect(harness.events.some((event) => event.type === 'resumed')).toBe(true);
  });

  it('turns unknown tools, invalid JSON, invalid arguments, thrown errors and timeouts into tool results', async () => {
    const failing = defineTool({
      name: 'explode',
      description: 'Throws.',
      input: z.object({}),
      execute: async () => {
        throw new Error('disk on fire');
      },
    }) as AnyTool;
    const hanging = defineTool({
      name: 'hang',
      description: 'Never returns unless aborted.',
      input: z.object({}),
      timeoutMs: 200,
      execute: (_input, context) => new Promise<string>((_resolve, reject) => context.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    }) as AnyTool;
    const harness = await bed.harness({ tools: [echoTool, failing, hanging] });
    bed.model.enqueue(
      {
        toolCalls: [
          { id: 'u1', name: 'no_such_tool', arguments: {} },
          { id: 'u2', name: 'echo', arguments: '{not json' },
          { id: 'u3', name: 'echo', arguments: { text: 42 } },
          { id: 'u4', name: 'explode', arguments: {} },
          { id: 'u5', name: 'hang', arguments: {} },
          { id: 'u6', name: 'echo', arguments: { text: 'fine' } },
        ],
      },
      { content: 'coped' },
    );
    await harness.agent.submit(personMessage(newThread(), 'try things'), { startSession: true });
    await harness.waitForEvent('answer', undefined, 15_000);
    const results = conversation(bed.model.requests[1]!.body).filter((message) => message['role'] === 'tool').map((message) => String(message['content']));
    expect(results[0]).toMatch(/^Error: unknown tool "no_such_tool"/);
    expect(results[1]).toMatch(/^Error: arguments of echo are not valid JSON/);
    expect(results[2]).toMatch(/^Error: invalid arguments for echo: text:/);
    expect(results[3]).toBe('Error: disk on fire');
    expect(results[4]).toMatch(/^Error: hang timed out after 200 ms and was stopped/);
    expect(results[5]).toBe('echo: fine');
  });
});

describe('model failures', () => {
  it('completes the run after two 429 responses', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ status: 429, retryAfter: 0 }, { status: 429, retryAfter: 0 }, { content: 'made it' });
    await harness.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    const answer = await harness.waitForEvent('answer');
    expect(answer.text).toBe('made it');
    expect(bed.model.requests).toHaveLength(3);
  });

  it('reports a permanent 500 as an error event and can be resumed later', async () => {
    const harness = await bed.harness();
    bed.model.respond(() => ({ status: 500, errorMessage: 'upstream down' }));
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'hi'), { startSession: true });
    const error = await harness.waitForEvent('error');
    expect(error.error.code).toBe('model');
    expect(error.error.retryable).toBe(true);
    const runner = await harness.agent.runner(session!.id);
    await runner.whenIdle();
    expect(runner.state).toBe('failed');
    expect(bed.model.requests).toHaveLength(3); // first try + 2 retries, then it stops (no busy loop)

    bed.model.reset();
    bed.model.enqueue({ content: 'back online' });
    await harness.agent.resume(session!.id);
    const answer = await harness.waitForEvent('answer');
    expect(answer.text).toBe('back online');
    expect(shape(conversation(bed.model.requests[0]!.body))).toEqual(['user:hi']);
  });
});

describe('usage', () => {
  it('records usage per call with cached tokens and sends the session id as prompt_cache_key', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'cached answer', usage: { promptTokens: 1500, cachedTokens: 1280, completionTokens: 7 } });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    await harness.waitForEvent('answer');
    expect(bed.model.requests[0]!.body.prompt_cache_key).toBe(session!.id);
    const calls = await bed.database.prisma.modelCall.findMany({ where: { sessionId: session!.id } });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ role: 'worker', model: 'test-model', promptTokens: 1500, cachedTokens: 1280, completionTokens: 7 });
    const status = await harness.agent.status(session!.id);
    expect(status.cacheRatio).toBeCloseTo(1280 / 1500);
  });

  it('records the usage of a paid call whose answer another writer\'s message refused (R14)', async () => {
    const harness = await bed.harness();
    const answerGate = gate();
    scriptRoles(bed.model, { worker: async () => (await answerGate.promise, at(900, { content: 'too late' })) });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'hi'), { startSession: true });
    await until(() => requestsOf(bed.model.requests, 'worker').length === 1, 10_000, 'the model call');
    // Another writer (a replica that took the lease over) stored its message where the answer goes.
    const { segment, messages } = await harness.stores.context.load(session!.id);
    await harness.stores.context.append(segment.id, { seq: messages.length, message: { role: 'assistant', content: 'the other writer' }, isInit: false, isMarker: false, memoryRunId: null, awaitingDelivery: false });
    answerGate.open();
    await harness.waitForEvent('run-end', (event) => event.session.id === session!.id);
    const stored = await bed.database.prisma.contextMessage.findMany({ where: { segment: { sessionId: session!.id }, role: 'assistant' } });
    expect(stored.map((row) => JSON.parse(row.content).content)).toEqual(['the other writer']);
    const calls = await bed.database.prisma.modelCall.findMany({ where: { sessionId: session!.id, role: 'worker' } });
    expect(calls.map((call) => call.promptTokens)).toEqual([900]);
  });
});
