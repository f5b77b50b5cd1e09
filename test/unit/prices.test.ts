// Built-in prices, context windows and image support of Claude models, and what cache writes cost.
import { describe, expect, it } from 'vitest';
import { contextWindowFor } from '../../src/core/loop/context-window.js';
import { modelAcceptsImages } from '../../src/core/loop/model-images.js';
import { costOf, pricesFor } from '../../src/core/prices.js';

describe('Claude in the built-in tables', () => {
  it('knows list prices per model family, with cache reads at 0.1× and writes at 1.25× input', () => {
    const inputs: Array<[string, number]> = [
      ['claude-opus-4-5', 5], ['claude-opus-4-5-20251101', 5], ['claude-opus-4-6', 5],
      ['claude-opus-4-1-20250805', 15], ['claude-opus-4-20250514', 15], ['claude-opus-4', 15], ['anthropic/claude-opus-4.1', 15], ['claude-3-opus-20240229', 15],
      ['claude-sonnet-4-5', 3], ['claude-sonnet-4-20250514', 3], ['claude-3-7-sonnet-latest', 3],
      ['claude-haiku-4-5-20251001', 1], ['claude-3-5-haiku-20241022', 0.8],
    ];
    for (const [model, input] of inputs) {
      const prices = pricesFor(model);
      expect(prices?.input, model).toBe(input);
      expect(prices?.cachedInput, model).toBeCloseTo(input * 0.1, 10);
      expect(prices?.cacheWrite, model).toBeCloseTo(input * 1.25, 10);
    }
    // Claude 3 Haiku's published cache prices are rounded up from those ratios.
    expect(pricesFor('claude-3-haiku-20240307')).toEqual({ input: 0.25, cachedInput: 0.03, cacheWrite: 0.3, output: 1.25 });
  });

  it('knows their 200k windows and that they accept images', () => {
    for (const model of ['claude-sonnet-4-5', 'claude-opus-4-1-20250805', 'claude-haiku-4-5', 'claude-3-5-haiku-20241022']) {
      expect(contextWindowFor(model), model).toEqual({ tokens: 200_000, known: true });
      expect(modelAcceptsImages(model), model).toBe(true);
    }
  });
});

describe('costOf', () => {
  const claude = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 };

  it('bills reported cache writes at the write price and the rest of the uncached input at the input price', () => {
    // 10,000 prompt tokens: 6,000 read, 3,000 written, 1,000 plain input; 500 output.
    const dollars = costOf(claude, { promptTokens: 10_000, cachedTokens: 6_000, cacheWriteTokens: 3_000, completionTokens: 500 });
    expect(dollars).toBeCloseTo((1_000 * 3 + 3_000 * 3.75 + 6_000 * 0.3 + 500 * 15) / 1e6, 12);
  });

  it('bills every uncached token as a write when the provider did not say, and never more writes than uncached tokens', () => {
    expect(costOf(claude, { promptTokens: 4_000, cachedTokens: 0, completionTokens: 0 })).toBeCloseTo((4_000 * 3.75) / 1e6, 12);
    expect(costOf(claude, { promptTokens: 4_000, cachedTokens: 1_000, cacheWriteTokens: 9_999, completionTokens: 0 })).toBeCloseTo((3_000 * 3.75 + 1_000 * 0.3) / 1e6, 12);
  });

  it('bills input at the input price for providers without a write price', () => {
    const gpt5 = pricesFor('gpt-5')!;
    expect(costOf(gpt5, { promptTokens: 2_000, cachedTokens: 1_000, cacheWriteTokens: 500, completionTokens: 100 })).toBeCloseTo((1_000 * 1.25 + 1_000 * 0.125 + 100 * 10) / 1e6, 12);
  });
});
