import { describe, expect, it } from 'vitest';
import { compactDiff, DEFAULT_LINE_DIFF_BUDGET, diffLines } from '../../src/core/line-diff.js';

/** About `characters` characters of short numbered lines ("l12345"), one per line. */
function shortLines(characters: number, label: (index: number) => string): string {
  const lines: string[] = [];
  let size = 0;
  for (let index = 0; size < characters; index += 1) {
    const line = label(index);
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

describe('diffLines', () => {
  it('finds the lines added and removed between two versions', () => {
    const diff = diffLines('a\nb\nc\nd\n', 'a\nB\nc\nd\ne\n');
    expect(diff).toEqual({ added: 2, removed: 1, lines: ['  a', '- b', '+ B', '  c', '  d', '+ e'] });
  });

  it('diffs a small change inside two 100,000-character documents exactly and quickly', () => {
    const before = shortLines(100_000, (index) => `l${index}`);
    const after = before.replace('\nl5000\n', '\nchanged\n').replace('\nl9000\n', '\nl9000\nnew\n');
    const started = performance.now();
    const diff = diffLines(before, after);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(diff.approximate).toBeUndefined();
    expect([diff.added, diff.removed]).toEqual([2, 1]);
    expect(compactDiff(diff, 0)).toBe('- l5000\n+ changed\n…\n+ new');
  });

  it('falls back to a whole replace of the changed middle when two 100,000-character documents differ everywhere', () => {
    // Every line differs: Myers' algorithm would need about 30,000 edits, far past the budget.
    const before = shortLines(100_000, (index) => `a${index}`);
    const after = shortLines(100_000, (index) => `b${index}`);
    const beforeLines = before.split('\n').length - 1;
    const afterLines = after.split('\n').length - 1;
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    const diff = diffLines(`same\n${before}same\n`, `same\n${after}same\n`);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(200 * 1024 * 1024);
    expect(diff.approximate).toMatch(/diff too large to compute line by line/);
    expect([diff.added, diff.removed]).toEqual([afterLines, beforeLines]);
    expect(diff.lines[0]).toBe('  same');
    expect(diff.lines.at(-1)).toBe('  same');
    expect(compactDiff(diff)).toMatch(/^\(diff too large to compute line by line: the \d+ changed lines before and \d+ after are shown as replaced whole\)\n {2}same\n- a0\n/);
  });

  it.each([
    ['the edit limit alone', { ...DEFAULT_LINE_DIFF_BUDGET, timeoutMs: 60_000 }],
    ['the time limit alone', { ...DEFAULT_LINE_DIFF_BUDGET, maxEditLength: Number.MAX_SAFE_INTEGER }],
  ])('stays within a second of CPU with %s', (_name, budget) => {
    const before = shortLines(100_000, (index) => `a${index}`);
    const after = shortLines(100_000, (index) => `b${index}`);
    // CPU time, not wall time: a busy machine delays the test but does not make the diff work more.
    const started = process.cpuUsage();
    expect(diffLines(before, after, budget).approximate).toBeDefined();
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(1_500);
  });

  it('keeps a tight budget even when the documents are small', () => {
    const diff = diffLines('a\nb\nc\n', 'x\ny\nz\n', { maxEditLength: 2, timeoutMs: 1_000 });
    expect(diff.approximate).toBeDefined();
    expect([diff.added, diff.removed]).toEqual([3, 3]);
    expect(diffLines('a\nb\nc\n', 'x\ny\nz\n').approximate).toBeUndefined();
  });
});
