// Context windows of common models, in tokens (R2 measures usage as a percent of this).

const table: Array<[RegExp, number]> = [
  [/^(openai\/)?gpt-4\.1/, 1_047_576],
  [/^(openai\/)?gpt-5/, 400_000],
  [/^(openai\/)?(o3|o4-mini)/, 200_000],
  [/^(openai\/)?gpt-4o/, 128_000],
  [/^(openai\/)?codex/, 400_000],
  [/deepseek-v4/, 1_000_000],
  [/deepseek/, 128_000],
  [/qwen3\.5/, 256_000],
  [/qwen/, 131_072],
  [/claude/, 200_000],
  [/gemini/, 1_048_576],
  [/llama-?3/, 128_000],
  [/mistral|mixtral/, 32_768],
];

/** Default for unknown models. */
export const defaultContextWindow = 128_000;

/** The window for `model`: the override if given, else the table, else 128k. */
export function contextWindowFor(model: string, override?: number): { tokens: number; known: boolean } {
  if (override) return { tokens: override, known: true };
  const name = model.toLowerCase();
  for (const [pattern, tokens] of table) if (pattern.test(name)) return { tokens, known: true };
  return { tokens: defaultContextWindow, known: false };
}

/** Tokens an image part is counted as (about what a 1024×1024 image costs at high detail). */
export const imageTokens = 1_000;

// A data URL inside the JSON of a message list (image parts); base64 has no quote or backslash.
const dataUrl = /"url":"data:[^"]*"/g;

/**
 * Estimated tokens of a message list: UTF-8 bytes of its compact JSON / 4, rounded up; an image
 * counts as `imageTokens`, not as the length of its bytes.
 */
export function estimateTokens(messages: readonly unknown[]): number {
  const json = JSON.stringify(messages);
  let bytes = Buffer.byteLength(json, 'utf8');
  let images = 0;
  if (json.includes('"url":"data:')) {
    for (const match of json.matchAll(dataUrl)) {
      bytes -= match[0].length;
      images += 1;
    }
  }
  return Math.ceil(bytes / 4) + images * imageTokens;
}

/** Estimated tokens of a whole request: the tools array plus the messages (R2's fallback). */
export function requestTokens(messages: readonly unknown[], tools: readonly unknown[]): number {
  return estimateTokens(messages) + (tools.length > 0 ? estimateTokens(tools) : 0);
}
