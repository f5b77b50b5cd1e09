// SteerInbox (core/loop/steer-inbox.ts): the store is asked for steers only when some may be queued.
import { describe, expect, it } from 'vitest';
import { LiveContext } from '../../src/core/loop/live-context.js';
import { SteerInbox } from '../../src/core/loop/steer-inbox.js';
import type { ContextStore, SegmentRecord, SteerRecord } from '../../src/core/store.js';

const segment: SegmentRecord = { id: 'g1', sessionId: 's1', ordinal: 1, lastStep: 0, summarizerRounds: 0, deciderRounds: 0, deciderDueIn: 0, contextTokens: 0, contextTokensSeq: 0, carriedMessages: 0 };

/** A ContextStore whose queue the test fills; counts how often it is asked. */
function queueStore(): { store: ContextStore; queue: SteerRecord[]; looks: () => number; duringLook: { run?: () => void } } {
  const queue: SteerRecord[] = [];
  let looks = 0;
  const duringLook: { run?: () => void } = {};
  const unused = () => Promise.reject(new Error('not used here'));
  const store: ContextStore = {
    load: unused, segmentMessages: unused, append: unused, appendInit: unused, updateSegment: unused, startSegment: unused, searchOriginals: unused, markToolCallStarted: unused, rewriteMessages: unused,
    async takeSteers() {
      looks += 1;
      duringLook.run?.();
      return queue.splice(0);
    },
  };
  return { store, queue, looks: () => looks, duringLook };
}

const steer = (id: number): SteerRecord => ({ id, sessionId: 's1', platformMessageKey: `k${id}`, authorId: 'u', authorName: 'Ada', text: `steer ${id}`, attachments: [], status: 'queued', receivedAt: new Date() });

describe('SteerInbox', () => {
  it('looks once after an arrival and not again until the next one', async () => {
    const { store, queue, looks } = queueStore();
    const inbox = new SteerInbox(new LiveContext(store, segment, []), 's1', (item) => ({ role: 'user', content: item.text }));
    queue.push(steer(1));
    expect((await inbox.take()).map((item) => item.id)).toEqual([1]);
    expect(await inbox.take()).toEqual([]);
    expect(await inbox.take()).toEqual([]);
    expect(looks()).toBe(1); // the look took everything stored before it: nothing new until an arrival
    inbox.arrived();
    queue.push(steer(2));
    expect((await inbox.take()).map((item) => item.id)).toEqual([2]);
  });

  it('keeps looking when a steer arrived during a look', async () => {
    const { store, looks, duringLook } = queueStore();
    const inbox = new SteerInbox(new LiveContext(store, segment, []), 's1', (item) => ({ role: 'user', content: item.text }));
    duringLook.run = () => inbox.arrived();
    await inbox.take();
    delete duringLook.run;
    expect(inbox.mayHaveQueued).toBe(true);
    await inbox.take();
    expect(inbox.mayHaveQueued).toBe(false);
    expect(looks()).toBe(2);
  });
});
