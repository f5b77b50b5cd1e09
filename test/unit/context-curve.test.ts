// The context's curve in `status` (adapters/chat/context-curve.ts): heights against the window,
// resets and their reasons, memory checkpoints, long sessions squeezed, worst-case size bounded.
import { describe, expect, it } from 'vitest';
import { contextCurve, contextCurveLines, MAX_COLUMNS } from '../../src/adapters/chat/context-curve.js';
import type { ContextStep } from '../../src/core/store.js';

const step = (segment: number, tokens: number, memory = false): ContextStep => ({ segment, tokens, memory });

describe('contextCurve', () => {
  it('draws a bar per step against the window, memory under its step, R and F under resets', () => {
    const curve = contextCurve({
      window: 8_000, omitted: 0,
      steps: [step(1, 900), step(1, 2_500, true), step(1, 7_999), step(2, 1_000), step(2, 8_000, true), step(3, 100)],
      resets: [{ segment: 2, reason: 'context-full' }, { segment: 3, reason: null }],
    });
    expect(curve).toMatchObject({ bars: '▁▃█│▁█│▁', marks: ' ^ F ^R', steps: 6, resets: 2, fullResets: 1, stepsPerColumn: 1 });
  });

  it('squeezes a long session into the column limit, taking the largest step of each column', () => {
    const steps = Array.from({ length: 1_000 }, (_, index) => step(index < 500 ? 1 : 2, index === 10 ? 10_000 : 100, index === 499));
    const curve = contextCurve({ window: 10_000, omitted: 4_000, steps, resets: [{ segment: 2, reason: null }] })!;
    expect(curve.bars.length).toBeLessThanOrEqual(MAX_COLUMNS);
    expect(curve.bars[0]).toBe('█');
    expect(curve.bars.replace(/[▁█]/g, '')).toBe('│');
    expect(curve.marks.trim()).toBe('^R');
    expect(curve.steps).toBe(5_000);
    expect(contextCurveLines({ window: 10_000, omitted: 4_000, steps, resets: [] }, { fenced: false })[0]).toBe('Context since the start: 5000 steps, 0 resets');
  });

  it('stays bounded on a worst case: 2,000 steps each in a context of its own', () => {
    const steps = Array.from({ length: 2_000 }, (_, index) => step(index + 1, index));
    const curve = contextCurve({ window: 1_000, omitted: 0, steps, resets: steps.slice(1).map((entry) => ({ segment: entry.segment, reason: null })) })!;
    // The newest twenty contexts, after a `…`: a column and a `│` each.
    expect(curve.bars).toBe(`…${'█│'.repeat(19)}█`);
    expect(curve.resets).toBe(1_999);
  });

  it('is empty before the first step', () => {
    expect(contextCurve({ window: 1_000, omitted: 0, steps: [], resets: [] })).toBeNull();
    expect(contextCurveLines({ window: 1_000, omitted: 0, steps: [], resets: [] }, { fenced: true })).toEqual([]);
  });
});
