// R17's mark is cleared in one place for every chat adapter (adapters/chat/delivery-marks.ts): after
// the render took an owed event, never for one it did not take, never for an event nobody owes.
import { describe, expect, it } from 'vitest';
import { markingDelivered } from '../../src/adapters/chat/delivery-marks.js';
import type { AgentEvent } from '../../src/core/events.js';
import type { SessionRecord } from '../../src/core/store.js';

const session = { id: 's1', platform: 'slack' } as SessionRecord;
const answer: AgentEvent = { type: 'answer', session, text: 'hi', segmentId: 'g1', seq: 4, fencingToken: 1, files: [] };
const reset = { type: 'context-reset', session, segmentId: 'g2', segmentOrdinal: 2, tokensBefore: 10, tokensAfter: 2, carriedMessages: 0, memoryCostUsd: null } as AgentEvent;
const memory = { type: 'memory-updated', session, memoryRunId: 'r1', round: 1, changes: [], usage: { promptTokens: 1, cachedTokens: 0, completionTokens: 1 }, note: '' } as AgentEvent;
const status = { type: 'run-start', session } as AgentEvent;

// biome-ignore lint/suspicious/noConfusingVoidType: a render that returns nothing took the event; only false leaves it owed
function rig(taken: boolean | void) {
  const log: string[] = [];
  const deliver = markingDelivered(async (event) => {
    log.push(`render ${event.type}`);
    return taken;
  }, async (event) => void log.push(`delivered ${event.type}`));
  return { log, deliver };
}

describe('delivery marks (R17)', () => {
  it('clears the mark of an answer, a memory note and a reset note once the render took it, not before', async () => {
    const { log, deliver } = rig(undefined);
    for (const event of [answer, memory, reset]) await deliver(event);
    expect(log).toEqual(['render answer', 'delivered answer', 'render memory-updated', 'delivered memory-updated', 'render context-reset', 'delivered context-reset']);
    const taken = rig(true);
    await taken.deliver(answer);
    expect(taken.log).toEqual(['render answer', 'delivered answer']);
  });

  it('leaves an answer the render did not take (fenced off) owed, and asks nothing for events nobody owes', async () => {
    const fenced = rig(false);
    await fenced.deliver(answer);
    expect(fenced.log).toEqual(['render answer']);
    const other = rig(undefined);
    await other.deliver(status);
    expect(other.log).toEqual(['render run-start']);
  });

  it('clears nothing when the render fails: the event is emitted again', async () => {
    const log: string[] = [];
    const deliver = markingDelivered(async () => {
      throw new Error('outbox down');
    }, async (event) => void log.push(`delivered ${event.type}`));
    await expect(deliver(answer)).rejects.toThrow('outbox down');
    expect(log).toEqual([]);
  });
});
