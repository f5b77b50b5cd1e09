// The context's curve in `status`: one bar per worker step (its height the context's share of
// the window), a `│` at each reset, and under it a mark line: `^` where memory ran (a summarizer
// forked after that step), `R` under a reset a decider or a person asked for, `F` under one made
// because the context was full (R19). Long sessions are squeezed into about MAX_COLUMNS: a column
// is then the largest of a few neighbouring steps (never across a reset); of many contexts only
// the newest MAX_SEGMENTS are drawn, after a `…`.
import type { ContextHistory, ContextStep } from '../../core/store.js';

const BARS = '▁▂▃▄▅▆▇█';
/** Columns the curve takes at most (a chat message stays readable on a phone). */
export const MAX_COLUMNS = 60;
/** Contexts drawn at most (the newest). */
const MAX_SEGMENTS = 20;

export interface ContextCurve {
  /** The bars, `│` between contexts. */
  bars: string;
  /** Marks aligned under the bars (a code block or a terminal keeps them aligned). */
  marks: string;
  steps: number;
  resets: number;
  fullResets: number;
  /** Steps per column (1: every step has its own). */
  stepsPerColumn: number;
}

/** The curve of a session's context history; null before its first worker step. */
export function contextCurve(history: ContextHistory & { window: number }): ContextCurve | null {
  if (history.steps.length === 0) return null;
  const all = groupBySegment(history.steps);
  // Many short contexts: the newest are drawn (each keeps at least a column of its own).
  const segments = all.slice(-MAX_SEGMENTS);
  const drawnSteps = segments.reduce((sum, steps) => sum + steps.length, 0);
  // Room for the bars once the `│`s are drawn, less one column per context for rounding up.
  const room = Math.max(1, MAX_COLUMNS - 2 * segments.length + 1);
  const stepsPerColumn = Math.max(1, Math.ceil(drawnSteps / room));
  const reasons = new Map(history.resets.map((reset) => [reset.segment, reset.reason]));
  let bars = segments.length < all.length ? '…' : '';
  let marks = bars === '' ? '' : ' ';
  segments.forEach((steps, index) => {
    if (index > 0) {
      bars += '│';
      marks += reasons.get(steps[0]!.segment) === 'context-full' ? 'F' : 'R';
    }
    for (let at = 0; at < steps.length; at += stepsPerColumn) {
      const column = steps.slice(at, at + stepsPerColumn);
      bars += bar(Math.max(...column.map((step) => step.tokens)), history.window);
      marks += column.some((step) => step.memory) ? '^' : ' ';
    }
  });
  return {
    bars, marks: marks.trimEnd(), steps: history.steps.length + history.omitted, resets: history.resets.length,
    fullResets: history.resets.filter((reset) => reset.reason === 'context-full').length, stepsPerColumn,
  };
}

/**
 * The curve as `status` lines: a title, the bars and marks (in a code block when `fenced`, for
 * chat), and the legend. Empty before the first worker step.
 */
export function contextCurveLines(history: ContextHistory & { window: number }, options: { fenced: boolean; bold?: boolean }): string[] {
  const curve = contextCurve(history);
  if (!curve) return [];
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
  const full = curve.fullResets > 0 ? ` (${curve.fullResets} when full)` : '';
  const title = `Context since the start: ${plural(curve.steps, 'step')}, ${plural(curve.resets, 'reset')}${full}`;
  const per = curve.stepsPerColumn > 1 ? `, ${curve.stepsPerColumn} steps a bar` : '';
  const legend = `▁…█ context per step, of the window${per} · ^ memory ran · │ reset (R asked for, F context full)`;
  const body = curve.marks === '' ? [curve.bars] : [curve.bars, curve.marks];
  return [
    options.bold ? `**${title}**` : title,
    ...(options.fenced ? ['```', ...body, '```'] : body),
    legend,
  ];
}

function bar(tokens: number, window: number): string {
  const share = window > 0 ? tokens / window : 0;
  const level = Math.min(BARS.length - 1, Math.max(0, Math.ceil(share * BARS.length) - 1));
  return BARS[level]!;
}

function groupBySegment(steps: readonly ContextStep[]): ContextStep[][] {
  const groups: ContextStep[][] = [];
  for (const step of steps) {
    const last = groups.at(-1);
    if (last && last[0]!.segment === step.segment) last.push(step);
    else groups.push([step]);
  }
  return groups;
}
