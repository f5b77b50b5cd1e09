// Tool results land in the model context, so their size is bounded relative to the window: one
// result may take at most a tenth of it, estimated at 4 characters per token. Tools cut their own
// output to the budget (they know where to cut); the executor applies the final cap to whatever a
// tool returns, so no tool (memory, MCP, a bug) can flood the context.

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

/** Keeps the head and tail of `text` within about `limit` characters, noting how much was cut. */
export function capHeadTail(text: string, limit: number, what = 'output'): string {
  if (text.length <= limit) return text;
  const half = Math.floor(limit / 2);
  const omitted = text.length - 2 * half;
  return `${text.slice(0, half)}\n[… ${omitted} characters of ${what} omitted (${text.length} in total); showing the first and last ${half} …]\n${text.slice(text.length - half)}`;
}
