import { describe, expect, it } from 'vitest';
import { newThread, personMessage } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { gate } from '../support/model-script.js';

const bed = useTestBed();

describe('RunnerRegistry', () => {
  it('keeps one runner per session and evicts runners that stayed idle', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'one' }, { content: 'two' });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'hi'), { startSession: true });
    const runner = await harness.agent.runner(session!.id);
    expect(await harness.agent.runner(session!.id)).toBe(runner);
    await runner.whenIdle();
    await runner.memory.settle();
    expect(harness.agent.runners.size).toBe(1);
    expect(await harness.agent.runners.evictIdle(Date.now())).toBe(0); // idle, but not for long
    expect(await harness.agent.runners.evictIdle(Date.now() + 11 * 60_000)).toBe(1);
    expect(harness.agent.runners.size).toBe(0);
    // A new message loads a fresh runner from the store and goes on where the session was.
    await harness.agent.submit(personMessage(thread, 'again'), { startSession: false });
    await harness.waitForEvent('answer', (event) => event.text === 'two');
    expect(bed.model.requests[1]!.body.messages.slice(2).map((message) => message['role'])).toEqual(['user', 'assistant', 'user']);
  });

  it('lets one work slot serve several sessions: a session waiting on its model holds none', async () => {
    const harness = await bed.harness({ settings: { runnerSlots: 1 } });
    const slowModel = gate();
    bed.model.respond(async (body) => {
      const last = JSON.stringify(body.messages.at(-1));
      if (last.includes('slow question')) await slowModel.promise;
      return { content: last.includes('slow question') ? 'slow answer' : 'quick answer' };
    });
    await harness.agent.submit(personMessage(newThread(), 'slow question'), { startSession: true });
    await harness.waitForEvent('run-start');
    // The only slot is free while the first session waits on the model: the second one runs.
    await harness.agent.submit(personMessage(newThread(), 'quick question'), { startSession: true });
    await harness.waitForEvent('answer', (event) => event.text === 'quick answer');
    expect(harness.events.some((event) => event.type === 'answer' && event.text === 'slow answer')).toBe(false);
    expect(harness.agent.runners.slots.waiting).toBe(0);
    slowModel.open();
    await harness.waitForEvent('answer', (event) => event.text === 'slow answer');
  });
});
