// R21 a run ends by itself: the step count lives on the session's row, so a process that dies in
// the middle of a looping run does not give the next one a fresh count; and the terminal chat says
// why it stopped and how to go on.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runConsoleChat } from '../../src/adapters/console/chat.js';
import { ConsoleOutput } from '../../src/adapters/console/output.js';
import { lastMessageText, type FakeReply, type FakeRequestBody } from '../fakes/fake-model-server.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { gate, roleOf } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();
const maxSteps = 4;
const usage = { promptTokens: 100, cachedTokens: 0, completionTokens: 5 };

/** Worker requests the model got for a session. */
const workerRequests = (sessionId: string) => bed.model.requests.filter((request) => request.body.prompt_cache_key === sessionId && roleOf(request.body) === 'worker');

/** Forks keep the context; the worker asks for one more tool call, or does what `worker` says. */
function script(worker: (body: FakeRequestBody) => FakeReply | null | Promise<FakeReply | null>): void {
  bed.model.reset();
  bed.model.respond(async (body): Promise<FakeReply> => {
    if (roleOf(body) !== 'worker') return { content: 'Still relevant.\nKEEP_CONTEXT', usage };
    return (await worker(body)) ?? { toolCalls: [{ name: 'memory_list', arguments: {} }], usage };
  });
}

describe('the step limit across a restart (R21)', () => {
  it('counts the steps taken before the process stopped: the next process stops the run at the same limit', async () => {
    // The second call hangs until the first process shuts down (it is cancelled: no answer stored).
    script((body) => (workerRequests(String(body.prompt_cache_key)).length === 2 ? { hang: true } : null));
    const first = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    const { session } = await first.agent.submit(personMessage(newThread(), 'read every page'), { startSession: true });
    const sessionId = session!.id;
    await until(() => workerRequests(sessionId).length === 2, 10_000, 'the second call');
    await first.close();
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ workerSteps: 1, runStartStep: 0, paused: false });

    script(() => null);
    const second = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    expect(await second.agent.recover()).toBeGreaterThanOrEqual(1);
    const stopped = await second.waitForEvent('step-limit', (event) => event.session.id === sessionId);
    expect(stopped).toMatchObject({ steps: maxSteps, maxSteps, sessionSteps: maxSteps });
    await (await second.agent.runners.peek(sessionId))?.whenIdle();
    // One answer stored before the restart, three after it (the requests seen since the script
    // was replaced): the limit, not the limit again.
    expect(workerRequests(sessionId)).toHaveLength(maxSteps - 1);
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ workerSteps: maxSteps, paused: true });
  });

  it('tells the thread again after a restart when the session is paused at the limit, under the same key', async () => {
    script(() => null);
    const first = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    const { session } = await first.agent.submit(personMessage(newThread(), 'loop'), { startSession: true });
    const sessionId = session!.id;
    const note = await first.waitForEvent('step-limit', (event) => event.session.id === sessionId);
    await first.close();

    const second = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    await second.agent.runners.get(sessionId);
    const again = await second.waitForEvent('step-limit', (event) => event.session.id === sessionId);
    expect(again).toMatchObject({ steps: note.steps, sessionSteps: note.sessionSteps });
    // Nothing was driven: the session waits for a person.
    expect(workerRequests(sessionId)).toHaveLength(maxSteps);
  });
});

describe('a reply in the middle of a run (R21, R9)', () => {
  it('begins a new run when it is taken: the count starts again from there', async () => {
    const replied = gate();
    script(async (body) => {
      // The second call waits until a person's reply is queued; it is taken at the next checkpoint.
      if (workerRequests(String(body.prompt_cache_key)).length === 2) await replied.promise;
      return null;
    });
    const h = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'read the pages'), { startSession: true });
    const sessionId = session!.id;
    await until(() => workerRequests(sessionId).length === 2, 10_000, 'the second call');
    await h.agent.submit(personMessage(thread, 'also read the appendix'), { startSession: false });
    replied.open();
    const stopped = await h.waitForEvent('step-limit', (event) => event.session.id === sessionId);
    expect(stopped).toMatchObject({ steps: maxSteps, sessionSteps: 2 + maxSteps });
    await (await h.agent.runners.peek(sessionId))?.whenIdle();
    expect(workerRequests(sessionId)).toHaveLength(2 + maxSteps);
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ workerSteps: 2 + maxSteps, runStartStep: 2, paused: true });
  });
});

describe('the step limit with a reset pending (R21, R6, R9)', () => {
  it('stops for the reset first, so a reply that waited for it begins a new run instead of sitting in a paused session', async () => {
    const summarizerDone = gate();
    const replied = gate();
    let summarizers = 0;
    let deciders = 0;
    bed.model.reset();
    bed.model.respond(async (body): Promise<FakeReply> => {
      const role = roleOf(body);
      // The first summarizer runs long: R6 lets the worker go on meanwhile, with the reset pending.
      if (role === 'summarizer') return (summarizers += 1) === 1 ? (await summarizerDone.promise, { content: 'no change', usage }) : { content: 'no change', usage };
      if (role === 'decider') return { content: (deciders += 1) === 1 ? 'Done with the old pages.\nRESET_CONTEXT' : 'Still relevant.\nKEEP_CONTEXT', usage };
      if (lastMessageText(body).includes('wrap up')) return { content: 'Wrapped up after the reset.', usage };
      // The second step waits until the reset is pending and a reply is queued behind it (R9).
      if (workerRequests(String(body.prompt_cache_key)).length === 2) await replied.promise;
      return { toolCalls: [{ name: 'memory_list', arguments: {} }], usage: { promptTokens: 1_000 + 700 * body.messages.length, cachedTokens: 0, completionTokens: 5 } };
    });
    const h = await bed.harness({ settings: { runMaxSteps: 3, contextWindow: 40_000 } });
    const thread = newThread();
    const { session } = await h.agent.submit(personMessage(thread, 'read the pages'), { startSession: true });
    const sessionId = session!.id;
    const runner = await h.agent.runner(sessionId);
    await until(() => runner.session.resetRequested, 10_000, 'the pending reset');
    await h.agent.submit(personMessage(thread, 'please wrap up'), { startSession: false });
    replied.open();
    // The limit is reached while the summarizer still runs: the worker stops for the reset.
    const end = await h.waitForEvent('run-end', (event) => event.session.id === sessionId);
    expect(end.reason).toBe('reset');
    expect(workerRequests(sessionId)).toHaveLength(3);
    summarizerDone.open();
    const answer = await h.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(answer.text).toBe('Wrapped up after the reset.');
    expect(h.events.some((event) => event.type === 'context-reset' && event.session.id === sessionId)).toBe(true);
    expect(h.events.filter((event) => event.type === 'step-limit')).toEqual([]);
    expect(workerRequests(sessionId)).toHaveLength(4);
  });
});

describe('the step limit in the terminal chat (R21)', () => {
  it('says why the run stopped and how to go on, and /resume continues it', async () => {
    let resumed = false;
    script(() => (resumed ? { content: 'Done reading.', usage } : null));
    const harness = await bed.harness({ settings: { runMaxSteps: maxSteps } });
    const input = new PassThrough();
    const screen = new PassThrough();
    let shown = '';
    screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
    const chat = runConsoleChat({
      agent: harness.agent, stores: harness.stores, events: harness.deps.events, input,
      output: new ConsoleOutput({ output: screen, terminal: false }), address: newThread(), userName: 'Ada',
    });
    input.write('read all the pages\n');
    await until(() => shown.includes('stopped after'), 10_000, 'the step-limit line');
    expect(shown).toContain(`  ⏸ stopped after ${maxSteps} steps (model calls) without finishing, the limit for one run (RUN_MAX_STEPS): type a reply or /resume to continue\n`);
    resumed = true;
    input.write('/resume\n');
    await until(() => shown.includes('Done reading.'), 10_000, 'the answer after /resume');
    expect(shown.match(/stopped after/g)).toHaveLength(1);
    input.write('/quit\n');
    expect(await chat).toBe('quit');
  });
});
