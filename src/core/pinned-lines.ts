// Pinned lines (docs/product.md "Review memory"): lines people marked as must-stay. A pin is the
// line's trimmed text; it holds while the document has a line with that text.

/** The text a pin keeps for a line: trimmed, inner whitespace as written. */
export function pinText(line: string): string {
  return line.trim();
}

/** True when `content` has a line whose trimmed text is `pinned`. */
export function hasLine(content: string, pinned: string): boolean {
  return content.split('\n').some((line) => pinText(line) === pinned);
}

/** The pins that `content` no longer has a line for, in pin order. */
export function droppedPins(pins: readonly string[], content: string, deleted = false): string[] {
  if (deleted) return [...pins];
  const lines = new Set(content.split('\n').map(pinText));
  return pins.filter((pin) => !lines.has(pin));
}

/** The lines of `content` that could be pinned (not blank), with their index, at most `limit`. */
export function pinnableLines(content: string, limit: number): Array<{ index: number; text: string }> {
  const lines: Array<{ index: number; text: string }> = [];
  for (const [index, line] of content.split('\n').entries()) {
    if (lines.length >= limit) break;
    if (pinText(line) !== '') lines.push({ index, text: pinText(line) });
  }
  return lines;
}
