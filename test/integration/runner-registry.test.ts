import { describe, expect, it } from 'vitest';
import { newThread, personMessage } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';

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
});
