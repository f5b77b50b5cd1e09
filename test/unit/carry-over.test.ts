// R20's last resort on a carry-over of many small messages: it fits the budget, keeps the newest
// messages in order, says how many stayed in the archive, and stays linear in the message count.
import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { trimCarryOver } from '../../src/core/memory/reset.js';
import type { StoredMessage } from '../../src/core/store.js';

function conversation(count: number): StoredMessage[] {
  return Array.from({ length: count }, (_, seq) => ({
    seq, message: { role: 'user', content: `message ${seq}` }, isInit: false, isMarker: false, memoryRunId: null,
  }) as StoredMessage);
}

describe('trimCarryOver', () => {
  it('drops the oldest of 40,000 small messages until the rest fits, and says how many', () => {
    const carried = conversation(40_000);
    const budget = 2_000;
    const trimmed = trimCarryOver(carried, budget);
    expect(estimateTokens(trimmed.map((entry) => entry.message))).toBeLessThanOrEqual(budget);
    const note = trimmed[0]?.message.content as string;
    const dropped = Number(/^\[(\d+) earlier messages/.exec(note)?.[1]);
    expect(trimmed.at(-1)?.message.content).toBe('message 39999');
    expect(dropped + trimmed.length - 1).toBe(40_000);
    // The newest messages are kept, in order, right after the note.
    expect(trimmed[1]?.message.content).toBe(`message ${dropped}`);
  });

  it('keeps everything when it already fits', () => {
    const carried = conversation(10);
    expect(trimCarryOver(carried, 10_000)).toEqual(carried);
  });
});
