import type pg from 'pg';
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

  it("starts the runner a message wakes from the row the intake read, and sends a session's hot statements as named statements on pg", async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'first' }, { content: 'second' });
    // Every statement any pooled client sends (Prisma's and the hot ones both run on this pool).
    const sent: string[] = [];
    const named = new Set<string>();
    const pool = bed.database.pool!;
    const watch = (client: pg.PoolClient) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          const config = args[0] as { text?: string; name?: string };
          sent.push(String(config.text ?? args[0]));
          if (config.name) named.add(String(config.text));
          return query(...args);
        },
      });
    };
    pool.on('acquire', watch);
    try {
      const thread = newThread();
      const { session } = await harness.agent.submit(personMessage(thread, 'hi'), { startSession: true });
      await harness.waitForEvent('answer', (event) => event.text === 'first');
      await (await harness.agent.runner(session!.id)).whenIdle();
      // An evicted session, woken by a reply, loads again from the reply's row.
      expect(await harness.agent.runners.evictIdle(Date.now() + 11 * 60_000)).toBe(1);
      await harness.agent.submit(personMessage(thread, 'again'), { startSession: false });
      await harness.waitForEvent('answer', (event) => event.text === 'second');
    } finally {
      pool.off('acquire', watch);
    }
    expect(sent.filter((sql) => /FROM "public"\."sessions"/.test(sql))).toEqual([]);
    // What every woken session and every step sends runs as a named statement on pg, not through
    // Prisma: the lease, the look for owed deliveries, MAIN.md's creation, the init messages' read
    // of MAIN.md and TODO.md, the steer drain, the answer, the context load.
    const hot = [/INSERT INTO session_leases/, /SELECT EXISTS \(SELECT 1 FROM context_messages/, /INSERT INTO memory_documents/, /FROM memory_documents\s+WHERE NOT deleted AND \(space_id, session_key, path\) IN/, /FROM steer_messages WHERE session_id/, /INSERT INTO context_messages/, /LEFT JOIN context_messages m ON m.segment_id = g.id/];
    for (const pattern of hot) {
      expect([...named].some((sql) => pattern.test(sql)), String(pattern)).toBe(true);
      expect(sent.filter((sql) => pattern.test(sql) && !named.has(sql)), String(pattern)).toEqual([]);
    }
  });
});
