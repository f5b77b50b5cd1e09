// What model calls cost (issue #16: the spend visible and capped in chat). List prices in US
// dollars per million tokens, for common models; MODEL_PRICES overrides them (src/config.ts).

/** Prices per million tokens. `cacheWrite`: billed for uncached prompt tokens instead of `input`
 * by providers that charge for writing their prompt cache (Anthropic-style, 1.25× input). */
export interface ModelPrices {
  input: number;
  cachedInput: number;
  output: number;
  cacheWrite?: number;
}

/** Token counts of one call or a sum of calls. */
export interface TokenUsage {
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

// List prices as published by the providers (December 2026); the first pattern that matches wins.
const table: Array<[RegExp, ModelPrices]> = [
  [/^(openai\/)?gpt-5(\.\d+)?-nano/, { input: 0.05, cachedInput: 0.005, output: 0.4 }],
  [/^(openai\/)?gpt-5(\.\d+)?-mini/, { input: 0.25, cachedInput: 0.025, output: 2 }],
  [/^(openai\/)?gpt-5/, { input: 1.25, cachedInput: 0.125, output: 10 }],
  [/^(openai\/)?gpt-4\.1-nano/, { input: 0.1, cachedInput: 0.025, output: 0.4 }],
  [/^(openai\/)?gpt-4\.1-mini/, { input: 0.4, cachedInput: 0.1, output: 1.6 }],
  [/^(openai\/)?gpt-4\.1/, { input: 2, cachedInput: 0.5, output: 8 }],
  [/^(openai\/)?gpt-4o-mini/, { input: 0.15, cachedInput: 0.075, output: 0.6 }],
  [/^(openai\/)?gpt-4o/, { input: 2.5, cachedInput: 1.25, output: 10 }],
  [/^(openai\/)?o4-mini/, { input: 1.1, cachedInput: 0.275, output: 4.4 }],
  [/^(openai\/)?o3/, { input: 2, cachedInput: 0.5, output: 8 }],
  [/claude.*haiku/, { input: 1, cachedInput: 0.1, cacheWrite: 1.25, output: 5 }],
  [/claude.*opus/, { input: 5, cachedInput: 0.5, cacheWrite: 6.25, output: 25 }],
  [/claude/, { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }],
  [/deepseek/, { input: 0.28, cachedInput: 0.028, output: 0.42 }],
];

/** The prices of `model`: the override if given, else the table, else null (cost unknown). */
export function pricesFor(model: string, override?: ModelPrices): ModelPrices | null {
  if (override) return override;
  const name = model.toLowerCase();
  for (const [pattern, prices] of table) if (pattern.test(name)) return prices;
  return null;
}

/** Dollars of `usage` at `prices`. */
export function costOf(prices: ModelPrices, usage: TokenUsage): number {
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
  return (uncached * (prices.cacheWrite ?? prices.input) + usage.cachedTokens * prices.cachedInput + usage.completionTokens * prices.output) / 1e6;
}

/** "$0.42", "$0.0031", "$12.40". */
export function formatDollars(amount: number): string {
  if (amount === 0) return '$0';
  if (amount < 0.01) return `$${amount.toPrecision(2)}`;
  return `$${amount.toFixed(2)}`;
}
