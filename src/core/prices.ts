// What model calls cost (issue #16: the spend visible and capped in chat). List prices in US
// dollars per million tokens, for common models; MODEL_PRICES overrides them (src/config.ts).

/** Prices per million tokens. `cacheWrite`: what providers that charge for writing their prompt
 * cache bill for the tokens written (Anthropic: 1.25× input; reads 0.1×). */
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
  /**
   * Prompt tokens written to the cache, when the provider reports them (Anthropic's
   * `cache_creation_input_tokens`); absent: unknown, and every uncached token is billed as a write.
   */
  cacheWriteTokens?: number | undefined;
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
  // Claude: cache reads 0.1× input, writes (5-minute entries) 1.25× input.
  [/claude-3-haiku/, { input: 0.25, cachedInput: 0.03, cacheWrite: 0.3, output: 1.25 }],
  [/claude-(3[-.]5-haiku|haiku-3[-.]5)/, { input: 0.8, cachedInput: 0.08, cacheWrite: 1, output: 4 }],
  [/claude.*haiku/, { input: 1, cachedInput: 0.1, cacheWrite: 1.25, output: 5 }],
  // Opus 3, 4 and 4.1 (dated, aliased, or with a Bedrock/Vertex suffix); later Opus models cost less.
  [/claude-3-opus|claude-opus-4(?:[-.]1)?(?:$|[@:]|-\d{8}|-v\d)/, { input: 15, cachedInput: 1.5, cacheWrite: 18.75, output: 75 }],
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

/**
 * Dollars of `usage` at `prices`. Uncached prompt tokens are billed as cache writes where the
 * provider reported how many it wrote (the rest at `input`), else all of them at `cacheWrite`
 * (what a provider that bills writes charges at most).
 */
export function costOf(prices: ModelPrices, usage: TokenUsage): number {
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
  const written = usage.cacheWriteTokens === undefined ? uncached : Math.min(uncached, usage.cacheWriteTokens);
  const input = (uncached - written) * prices.input + written * (prices.cacheWrite ?? prices.input);
  return (input + usage.cachedTokens * prices.cachedInput + usage.completionTokens * prices.output) / 1e6;
}

/** "$0.42", "$0.0031", "$12.40". */
export function formatDollars(amount: number): string {
  if (amount === 0) return '$0';
  if (amount < 0.01) return `$${amount.toPrecision(2)}`;
  return `$${amount.toFixed(2)}`;
}
