// Context windows of common models, in tokens (R2 measures usage as a percent of this).
import { nonAsciiUnits } from '../output-cap.js';

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

/** Tokens an image part is counted as at least (about what a 1024×1024 image costs at high detail). */
export const imageTokens = 1_000;

/**
 * Characters of an image's data URL counted as one token. Providers bill an image by its pixels,
 * yet its bytes are what the context holds and every request carries: counted this way, a context
 * full of images reaches R2's reset long before its requests outgrow memory (a 5 MiB image counts
 * about 27,000 tokens; 32 MiB of images fill a 128k window).
 */
export const imageCharsPerToken = 256;

/** Tokens one image part counts (R2): its data URL's size, at least `imageTokens`. */
export function imagePartTokens(url: string): number {
  return Math.max(imageTokens, Math.ceil(url.length / imageCharsPerToken));
}

/**
 * Estimated tokens of a message list: its compact JSON measured by textTokens, with an image
 * counted by imagePartTokens. Image data is left out of the JSON, not copied into it.
 */
export function estimateTokens(messages: readonly unknown[]): number {
  // Image parts live only in list contents; without one, the plain (much faster) serializer.
  if (!messages.some(hasPartList)) return textTokens(JSON.stringify(messages));
  let images = 0;
  const json = JSON.stringify(messages, (key, value: unknown) => {
    if (key === 'url' && typeof value === 'string' && value.startsWith('data:')) {
      images += imagePartTokens(value);
      return '';
    }
    return value;
  });
  return textTokens(json) + images;
}

/**
 * Estimated tokens of text (R2): ASCII at 4 characters a token, and every other character (a
 * UTF-16 unit) a token of its own. Tokenizers spend about 1 to 1.5 tokens on a CJK character, so
 * counting its 3 UTF-8 bytes / 4 let CJK text take over twice its share; a token per character is
 * conservative for accented Latin and Cyrillic. Linear, and pure ASCII is measured natively.
 */
export function textTokens(text: string): number {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes === text.length) return Math.ceil(bytes / 4);
  const other = nonAsciiUnits(text);
  return Math.ceil((text.length - other) / 4) + other;
}

function hasPartList(message: unknown): boolean {
  return typeof message === 'object' && message !== null && Array.isArray((message as { content?: unknown }).content);
}

/**
 * What image parts count beyond what a provider reports for them: a provider's usage counts an
 * image as its pixels (about `imageTokens`), R2 counts its bytes too (imagePartTokens).
 */
export function imageSurplusTokens(messages: ReadonlyArray<{ content?: unknown }>): number {
  let surplus = 0;
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as Array<{ type?: unknown; image_url?: { url?: unknown } }>) {
      const url = part.type === 'image_url' ? part.image_url?.url : undefined;
      if (typeof url === 'string') surplus += imagePartTokens(url) - imageTokens;
    }
  }
  return surplus;
}

/** Estimated tokens of a whole request: the tools array plus the messages (R2's fallback). */
export function requestTokens(messages: readonly unknown[], tools: readonly unknown[]): number {
  return estimateTokens(messages) + (tools.length > 0 ? estimateTokens(tools) : 0);
}
