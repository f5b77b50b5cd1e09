// Splits a long Markdown message into parts that fit a platform's limit (Slack 3,000, Discord
// 2,000), preferring paragraph boundaries and never cutting inside a fenced code block: a code
// block longer than the limit is closed at the cut and reopened, with its language, in the next part.

/** Options of `splitMessage`. */
export interface SplitOptions {
  /** Maximum length of each part in UTF-16 code units (≥ 50). Always respected. */
  limit: number;
  /** Append "(1/3)"-style part numbers when the text needs more than one part (default true). */
  numbered?: boolean;
}

/** A run of lines that is packed as a whole when it fits. */
interface Unit {
  lines: string[];
  /** For a fenced code block: its opening line and the closing line to add at a cut. */
  fence?: { open: string; close: string; closed: boolean };
  blank: boolean;
}

// Fences may be indented (inside list items); the info string of a backtick fence has no backtick.
const fenceOpen = /^(\s*)(`{3,}|~{3,})([^`]*)$/;
// Reserved for "\n(999/999)".
const numberReserve = 10;

/** Splits `text` into parts of at most `limit` characters; one part when it already fits. */
export function splitMessage(text: string, options: SplitOptions): string[] {
  const { limit } = options;
  if (limit < 50) throw new RangeError(`splitMessage: limit must be at least 50, got ${limit}`);
  if (text.length <= limit) return [text];
  const numbered = options.numbered ?? true;
  const budget = numbered ? limit - numberReserve : limit;
  const parts = pack(toUnits(text.split('\n')), budget);
  if (!numbered || parts.length < 2) return parts;
  return parts.map((part, index) => `${part}\n(${index + 1}/${parts.length})`);
}

/** Groups lines into fenced code blocks, blank lines and paragraphs. */
function toUnits(lines: string[]): Unit[] {
  const units: Unit[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length > 0) units.push({ lines: paragraph, blank: false });
    paragraph = [];
  };
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    const open = fenceOpen.exec(line);
    if (open) {
      flush();
      const [, indent = '', marker = '```'] = open;
      const closing = new RegExp(`^\\s*${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`);
      const block = [line];
      let closed = false;
      for (index += 1; index < lines.length; index += 1) {
        const inner = lines[index] ?? '';
        block.push(inner);
        if (closing.test(inner)) {
          closed = true;
          break;
        }
      }
      units.push({ lines: block, blank: false, fence: { open: line, close: `${indent}${marker}`, closed } });
    } else if (line.trim() === '') {
      flush();
      units.push({ lines: [line], blank: true });
    } else {
      paragraph.push(line);
    }
  }
  flush();
  return units;
}

/** Packs units greedily into parts of at most `budget` characters. */
function pack(units: Unit[], budget: number): string[] {
  const parts: string[] = [];
  let current: string[] = [];
  const size = (lines: string[]) => lines.reduce((total, line) => total + line.length + 1, 0) - (lines.length > 0 ? 1 : 0);
  const flush = () => {
    const trimmed = trimBlankLines(current);
    if (trimmed.length > 0) parts.push(trimmed.join('\n'));
    current = [];
  };
  for (const unit of units) {
    if (unit.blank && current.length === 0) continue; // no part starts with blank lines
    const joined = [...current, ...unit.lines];
    if (size(joined) <= budget) {
      current = joined;
      continue;
    }
    flush();
    if (size(unit.lines) <= budget) {
      current = unit.blank ? [] : [...unit.lines];
      continue;
    }
    const pieces = unit.fence ? splitCodeBlock(unit.lines, unit.fence, budget) : splitParagraph(unit.lines, budget);
    for (const piece of pieces.slice(0, -1)) parts.push(piece.join('\n'));
    current = pieces.at(-1) ?? [];
  }
  flush();
  return parts;
}

/** Cuts an oversized code block into blocks that each reopen and close the fence. */
function splitCodeBlock(lines: string[], fence: NonNullable<Unit['fence']>, budget: number): string[][] {
  const body = lines.slice(1, fence.closed ? -1 : undefined);
  // Room for the body in each piece: the opening line, the closing line and their two newlines.
  const room = budget - fence.open.length - fence.close.length - 2;
  if (room < 10) return splitParagraph(lines, budget); // a pathological info string: plain cuts
  const chunks: string[][] = [];
  let chunk: string[] = [];
  let length = 0;
  for (const line of body.flatMap((line) => hardWrap(line, room))) {
    const added = chunk.length === 0 ? line.length : line.length + 1;
    if (chunk.length > 0 && length + added > room) {
      chunks.push(chunk);
      chunk = [];
      length = 0;
    }
    length += chunk.length === 0 ? line.length : line.length + 1;
    chunk.push(line);
  }
  if (chunk.length > 0 || chunks.length === 0) chunks.push(chunk);
  return chunks.map((piece, index) => {
    const last = index === chunks.length - 1;
    return [fence.open, ...piece, ...(last && !fence.closed ? [] : [fence.close])];
  });
}

/** Cuts an oversized paragraph at line ends, then at spaces, then anywhere. */
function splitParagraph(lines: string[], budget: number): string[][] {
  const pieces: string[][] = [];
  let piece: string[] = [];
  let length = 0;
  for (const line of lines.flatMap((line) => hardWrap(line, budget))) {
    const added = piece.length === 0 ? line.length : line.length + 1;
    if (piece.length > 0 && length + added > budget) {
      pieces.push(piece);
      piece = [];
      length = 0;
    }
    length += piece.length === 0 ? line.length : line.length + 1;
    piece.push(line);
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/** Breaks one line into pieces of at most `width`, at a space when there is one in the second half. */
function hardWrap(line: string, width: number): string[] {
  const pieces: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    if (space >= width / 2) {
      pieces.push(rest.slice(0, space));
      rest = rest.slice(space + 1);
      continue;
    }
    // Never separate the halves of a surrogate pair (emoji and other astral characters).
    const code = rest.charCodeAt(width - 1);
    const cut = code >= 0xd800 && code <= 0xdbff ? width - 1 : width;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

function trimBlankLines(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && (lines[start] ?? '').trim() === '') start += 1;
  while (end > start && (lines[end - 1] ?? '').trim() === '') end -= 1;
  return lines.slice(start, end);
}
