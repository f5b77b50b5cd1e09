// The `status` answer's memory line (adapters/chat/command-runner.ts): where the next memory
// checkpoint is and what the memory did so far, so a person sees the memory work in a short chat.
import { describe, expect, it } from 'vitest';
import { memoryLine } from '../../src/adapters/chat/command-runner.js';

const calls = (summarizer: number) => ({
  worker: { calls: 3, promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
  summarizer: { calls: summarizer, promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
  decider: { calls: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
});

describe('memoryLine', () => {
  it('names the next checkpoint, how far it is, the summarizer calls and the resets', () => {
    expect(memoryLine({ memoryCheckpoint: { percent: 6, tokensAway: 3_200 }, usage: calls(2), segmentOrdinal: 2 }))
      .toBe('**Memory:** next checkpoint at 6% of the window (about 3.2k tokens from now) · 2 summarizer calls · 1 reset');
  });

  it('says nothing happened yet in a new session', () => {
    expect(memoryLine({ memoryCheckpoint: { percent: 3, tokensAway: 250 }, usage: calls(0), segmentOrdinal: 1 }))
      .toBe('**Memory:** next checkpoint at 3% of the window (about 250 tokens from now) · 0 summarizer calls · 0 resets');
  });
});
