// Editing a memory document inside a platform's modal (docs/product.md "Review memory"): a modal holds a
// few text inputs of limited size (Slack 3,000 characters, Discord 4,000 and at most 5 inputs), so
// a long document is edited one part at a time, a part being a section chosen by its heading (a
// section too long for one modal is cut into chunks at line ends). Nothing is cut silently: every
// character of the document belongs to exactly one part, and a part to its pieces (one per input).

/** How much text one modal holds. */
export interface PartLimits {
  /** Characters per text input. */
  inputChars: number;
  /** Text inputs per modal. */
  inputs: number;
}

/** Which part, in a way that still finds it in a newer version of the document. */
export interface PartKey {
  /** The heading line that starts the section ('' for the text before the first heading, or the whole document). */
  heading: string;
  /** Which section with that heading (0 for the first). */
  occurrence: number;
  /** Which chunk of the section (0 unless the section needs several modals). */
  chunk: number;
}

/** A part of a document: lines [startLine, endLine) of its text. */
export interface DocumentPart {
  index: number;
  key: PartKey;
  /** What people choose it by: the heading, "(top of the document)", or "the whole document"; chunks say "part 2 of 3". */
  title: string;
  startLine: number;
  endLine: number;
  text: string;
}

/** A part's text as the inputs of a modal: pieces, and what joins each to the next ('\n', or '' inside a line). */
export interface PartPieces {
  pieces: string[];
  joins: string[];
}

/** The parts of `content`: one when it fits one modal, else its sections (chunked when needed). */
export function documentParts(content: string, limits: PartLimits): DocumentPart[] {
  const lines = content.split('\n');
  if (fits(content, limits)) return [{ index: 0, key: { heading: '', occurrence: 0, chunk: 0 }, title: 'the whole document', startLine: 0, endLine: lines.length, text: content }];
  const parts: DocumentPart[] = [];
  const seen = new Map<string, number>();
  for (const section of sections(lines)) {
    const occurrence = seen.get(section.heading) ?? 0;
    seen.set(section.heading, occurrence + 1);
    const chunks = chunkLines(lines, section.start, section.end, limits);
    const name = section.heading === '' ? '(top of the document)' : section.heading.replace(/^#+\s*/, '');
    for (const [chunk, range] of chunks.entries()) {
      parts.push({
        index: parts.length,
        key: { heading: section.heading, occurrence, chunk },
        title: chunks.length > 1 ? `${name} (part ${chunk + 1} of ${chunks.length})` : name,
        startLine: range.start,
        endLine: range.end,
        text: lines.slice(range.start, range.end).join('\n'),
      });
    }
  }
  return parts;
}

/** The part of `content` with `key` (in a newer version), or null when it is gone. */
export function findPart(content: string, key: PartKey, limits: PartLimits): DocumentPart | null {
  const parts = documentParts(content, limits);
  if (key.heading === '' && key.chunk === 0 && parts.length === 1) return parts[0] ?? null;
  return parts.find((part) => part.key.heading === key.heading && part.key.occurrence === key.occurrence && part.key.chunk === key.chunk) ?? null;
}

/** Splits a part's text into input-sized pieces, at line ends where possible. */
export function partPieces(text: string, inputChars: number): PartPieces {
  const pieces: string[] = [];
  const joins: string[] = [];
  let current: string | null = null;
  for (const line of text.split('\n')) {
    if (current !== null && current.length + 1 + line.length <= inputChars) {
      current = `${current}\n${line}`;
      continue;
    }
    if (current !== null) {
      pieces.push(current);
      joins.push('\n');
    }
    // A line longer than an input is cut inside the line; the join says so.
    let rest = line;
    while (rest.length > inputChars) {
      pieces.push(rest.slice(0, inputChars));
      joins.push('');
      rest = rest.slice(inputChars);
    }
    current = rest;
  }
  pieces.push(current ?? '');
  return { pieces, joins };
}

/** The part's text from its (edited) pieces, joined as partPieces cut them. */
export function joinPieces(pieces: readonly string[], joins: readonly string[]): string {
  return pieces.map((piece, index) => (index === 0 ? piece : `${joins[index - 1] ?? '\n'}${piece}`)).join('');
}

/** Joins as a short code for a modal's metadata: "n" for a line break, "c" for a cut inside a line. */
export function encodeJoins(joins: readonly string[]): string {
  return joins.map((join) => (join === '' ? 'c' : 'n')).join('');
}

/** The joins an encodeJoins code stands for (anything unknown reads as a line break). */
export function decodeJoins(code: string): string[] {
  return [...code].map((letter) => (letter === 'c' ? '' : '\n'));
}

/**
 * The document with `part` replaced by `text`. Inputs often drop trailing line breaks: a part
 * that ended with them keeps them.
 */
export function replacePart(content: string, part: DocumentPart, text: string): string {
  const lines = content.split('\n');
  const trailing = /\n*$/.exec(part.text)?.[0] ?? '';
  const replaced = trailing && !text.endsWith(trailing) ? `${text.replace(/\n*$/, '')}${trailing}` : text;
  return [...lines.slice(0, part.startLine), ...replaced.split('\n'), ...lines.slice(part.endLine)].join('\n');
}

function fits(text: string, limits: PartLimits): boolean {
  return text.length <= limits.inputChars * limits.inputs && partPieces(text, limits.inputChars).pieces.length <= limits.inputs;
}

/** Sections by Markdown heading (a line starting with 1–6 '#'), outside code fences. */
function sections(lines: readonly string[]): Array<{ heading: string; start: number; end: number }> {
  const found: Array<{ heading: string; start: number; end: number }> = [];
  let fenced = false;
  let start = 0;
  let heading = '';
  for (const [index, line] of lines.entries()) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced || !/^#{1,6}\s/.test(line)) continue;
    if (index > start || heading !== '') found.push({ heading, start, end: index });
    start = index;
    heading = line.trim().slice(0, 150);
  }
  found.push({ heading, start, end: lines.length });
  return found;
}

/** Line ranges of a section that each fit one modal (a line too long for any modal stands alone). */
function chunkLines(lines: readonly string[], start: number, end: number, limits: PartLimits): Array<{ start: number; end: number }> {
  const chunks: Array<{ start: number; end: number }> = [];
  // Greedy pieces are pairwise longer than one input, so text this short always fits: only
  // longer candidates are checked (keeps this linear for long sections).
  const surelyFits = (limits.inputChars * (limits.inputs - 1)) / 2;
  let chunkStart = start;
  let length = 0;
  for (let index = start; index < end; index += 1) {
    length += (index > chunkStart ? 1 : 0) + (lines[index]?.length ?? 0);
    if (length <= surelyFits || fits(lines.slice(chunkStart, index + 1).join('\n'), limits)) continue;
    if (index > chunkStart) {
      chunks.push({ start: chunkStart, end: index });
      chunkStart = index;
      length = lines[index]?.length ?? 0;
      if (length <= surelyFits || fits(lines[index] ?? '', limits)) continue;
    }
    chunks.push({ start: index, end: index + 1 });
    chunkStart = index + 1;
    length = 0;
  }
  if (chunkStart < end || chunks.length === 0) chunks.push({ start: chunkStart, end: Math.max(end, chunkStart) });
  return chunks;
}
