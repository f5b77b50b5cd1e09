// Tool results land in the model context, so their size is bounded relative to the window: one
// result may take at most a tenth of it, estimated at 4 characters per token (a character that is
// not ASCII weighs a token, as R2 counts it). Tools cut their own output to the budget (they know
// where to cut); the executor applies the final cap to whatever a tool returns, so no tool
// (memory, MCP, a bug) can flood the context.
/** Share of the context window one tool result may fill. */
export const RESULT_WINDOW_SHARE = 0.1;

/** Rough characters per token used to turn the token budget into characters. */
export const CHARS_PER_TOKEN = 4;

/** Room for a tool's own header and notes on top of the body budget, in characters. */
export const RESULT_OVERHEAD_CHARS = 2_000;

/** Largest tool error message shown to the model, in characters. */
export const MAX_ERROR_CHARS = 4_000;

/** Largest result body, in characters, for a model with `contextWindow` tokens (at least 2,000). */
export function resultBudgetChars(contextWindow: number): number {
  return Math.max(2000, Math.floor(contextWindow * RESULT_WINDOW_SHARE * CHARS_PER_TOKEN));
}

/** The hard cap the executor applies to any tool result: the body budget plus header room. */
export function resultLimitChars(contextWindow: number): number {
  return resultBudgetChars(contextWindow) + RESULT_OVERHEAD_CHARS;
}

/**
 * Keeps the head and tail of `text` within about `limit` characters, noting how much was cut. A
 * character that is not ASCII weighs CHARS_PER_TOKEN: R2 counts it as a token of its own
 * (textTokens), so a limit in characters bounds the tokens of CJK text as it does of English.
 */
export function capHeadTail(text: string, limit: number, what = 'output'): string {
  if (text.length * CHARS_PER_TOKEN <= limit) return text;
  const other = Buffer.byteLength(text, 'utf8') === text.length ? 0 : nonAsciiUnits(text);
  if (text.length + other * (CHARS_PER_TOKEN - 1) <= limit) return text;
  const half = Math.floor(limit / 2);
  if (other === 0) {
    const omitted = text.length - 2 * half;
    return `${text.slice(0, half)}\n[… ${omitted} characters of ${what} omitted (${text.length} in total); showing the first and last ${half} …]\n${text.slice(text.length - half)}`;
  }
  // Walks in from each end while the weight fits its half, never splitting a surrogate pair.
  let head = 0;
  for (let weight = 0; head < text.length && (weight += unitWeight(text, head)) <= half;) head += 1;
  if (isLowSurrogate(text, head)) head -= 1;
  let tail = text.length;
  for (let weight = 0; tail > head && (weight += unitWeight(text, tail - 1)) <= half;) tail -= 1;
  if (isLowSurrogate(text, tail)) tail += 1;
  const omitted = tail - head;
  return `${text.slice(0, head)}\n[… ${omitted} characters of ${what} omitted (${text.length} in total); showing the first ${head} and last ${text.length - tail} …]\n${text.slice(tail)}`;
}

function unitWeight(text: string, index: number): number {
  return text.charCodeAt(index) > 0x7f ? CHARS_PER_TOKEN : 1;
}

function isLowSurrogate(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff;
}

/** How many UTF-16 units of `text` are not ASCII. */
export function nonAsciiUnits(text: string): number {
  let count = 0;
  for (let index = 0; index < text.length; index += 1) if (text.charCodeAt(index) > 0x7f) count += 1;
  return count;
}
