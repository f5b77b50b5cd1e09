// Which models accept image parts (Chat Completions `image_url`), for common model names. A model
// that does not would refuse a request with one, so unknown models are assumed not to; MODEL_IMAGES
// overrides the table either way.

const acceptsImages: RegExp[] = [
  /^(openai\/)?gpt-4o/, /^(openai\/)?gpt-4\.1/, /^(openai\/)?gpt-4-turbo/, /^(openai\/)?gpt-5/, /^(openai\/)?o[134](-|$)/,
  /claude-(3|sonnet-4|opus-4|haiku-4)/, /claude-(sonnet|opus|haiku)-\d/, /gemini/, /pixtral|mistral-(small|medium)-(2503|25|3)/,
  /qwen.*-vl|qwen2\.5-omni|qwen3\.5/, /llava|llama-?3\.2-.*vision|llama-?4/, /grok-(2-vision|4)/, /-vl\b|vision/,
];

// Names that match a pattern above but are text only.
const textOnly: RegExp[] = [/^(openai\/)?o1-mini/, /^(openai\/)?o3-mini/, /^(openai\/)?gpt-5-codex-mini/];

/** True when `model` accepts image parts: `override` when given, else the table (unknown: false). */
export function modelAcceptsImages(model: string, override?: boolean): boolean {
  if (override !== undefined) return override;
  const name = model.toLowerCase();
  if (textOnly.some((pattern) => pattern.test(name))) return false;
  return acceptsImages.some((pattern) => pattern.test(name));
}
