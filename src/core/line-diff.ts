// Line diffs of memory documents, for notes ("MAIN.md +8 −2") and for people reviewing a change.

export interface LineDiff {
  added: number;
  removed: number;
  /** Unified-style lines: "  same", "+ added", "- removed". */
  lines: string[];
}

/** Diffs two texts line by line (longest common subsequence; documents are small). */
export function diffLines(before: string, after: string): LineDiff {
  const a = splitLines(before);
  const b = splitLines(after);
  const width = b.length + 1;
  const lengths = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lengths[i * width + j] =
        a[i] === b[j] ? (lengths[(i + 1) * width + j + 1] ?? 0) + 1 : Math.max(lengths[(i + 1) * width + j] ?? 0, lengths[i * width + j + 1] ?? 0);
    }
  }
  const lines: string[] = [];
  let added = 0;
  let removed = 0;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push(`  ${a[i]}`);
      i += 1;
      j += 1;
    } else if (j < b.length && (i >= a.length || (lengths[i * width + j + 1] ?? 0) > (lengths[(i + 1) * width + j] ?? 0))) {
      lines.push(`+ ${b[j]}`);
      added += 1;
      j += 1;
    } else {
      lines.push(`- ${a[i]}`);
      removed += 1;
      i += 1;
    }
  }
  return { added, removed, lines };
}

/** Only the changed lines with `context` lines around them; "…" between distant hunks. */
export function compactDiff(diff: LineDiff, context = 2): string {
  const keep = new Set<number>();
  diff.lines.forEach((line, index) => {
    if (!line.startsWith('  ')) for (let k = index - context; k <= index + context; k += 1) keep.add(k);
  });
  const out: string[] = [];
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
