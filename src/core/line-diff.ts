// Line diffs of memory documents, for notes ("MAIN.md +8 −2") and for people reviewing a change.
// Documents are written by a model and may be large or adversarial, so the diff has a budget:
// the common head and tail are matched in linear time, the middle goes to Myers' algorithm (the
// `diff` package) with an edit-length and time limit, and past that the middle is shown as
// replaced whole — exact counts of what it holds, computed in linear time, and said so.
import { diffArrays } from 'diff';

/** A line diff of two texts. */
export interface LineDiff {
  added: number;
  removed: number;
  /** Unified-style lines: "  same", "+ added", "- removed". */
  lines: string[];
  /** Set when the budget was exceeded and the changed middle is shown as replaced whole. */
  approximate?: string;
}

/** Limits of one diffLines call. */
export interface LineDiffBudget {
  /** Most line edits Myers' algorithm may look for (default 2,000). */
  maxEditLength: number;
  /** Most milliseconds Myers' algorithm may take (default 200). */
  timeoutMs: number;
}

/** Default budget: a few hundred milliseconds at worst, whatever the documents hold. */
export const DEFAULT_LINE_DIFF_BUDGET: LineDiffBudget = { maxEditLength: 2_000, timeoutMs: 200 };

/** Diffs two texts line by line, within `budget` (see LineDiff.approximate). */
export function diffLines(before: string, after: string, budget: LineDiffBudget = DEFAULT_LINE_DIFF_BUDGET): LineDiff {
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail += 1;
  const oldMiddle = a.slice(head, a.length - tail);
  const newMiddle = b.slice(head, b.length - tail);

  const lines: string[] = a.slice(0, head).map((line) => `  ${line}`);
  let added = 0;
  let removed = 0;
  let approximate: string | undefined;
  // Myers' algorithm costs O((N+M)·D) for D edits: the edit limit and the clock bound it.
  const changes = diffArrays(oldMiddle, newMiddle, { maxEditLength: budget.maxEditLength, timeout: budget.timeoutMs });
  if (changes === undefined && (oldMiddle.length > 0 || newMiddle.length > 0)) {
    approximate = `diff too large to compute line by line: the ${oldMiddle.length} changed lines before and ${newMiddle.length} after are shown as replaced whole`;
    for (const line of oldMiddle) lines.push(`- ${line}`);
    for (const line of newMiddle) lines.push(`+ ${line}`);
    removed = oldMiddle.length;
    added = newMiddle.length;
  } else {
    for (const change of changes ?? []) {
      const prefix = change.added ? '+ ' : change.removed ? '- ' : '  ';
      for (const line of change.value) lines.push(`${prefix}${line}`);
      if (change.added) added += change.value.length;
      else if (change.removed) removed += change.value.length;
    }
  }
  for (const line of a.slice(a.length - tail)) lines.push(`  ${line}`);
  return approximate === undefined ? { added, removed, lines } : { added, removed, lines, approximate };
}

/** Only the changed lines with `context` lines around them; "…" between distant hunks. */
export function compactDiff(diff: LineDiff, context = 2): string {
  const keep = new Set<number>();
  diff.lines.forEach((line, index) => {
    if (!line.startsWith('  ')) for (let k = index - context; k <= index + context; k += 1) keep.add(k);
  });
  const out: string[] = diff.approximate === undefined ? [] : [`(${diff.approximate})`];
  let last = -2;
  diff.lines.forEach((line, index) => {
    if (!keep.has(index)) return;
    if (last >= 0 && index > last + 1) out.push('…');
    out.push(line);
    last = index;
  });
  return out.join('\n');
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  return text.replace(/\n$/, '').split('\n');
}
