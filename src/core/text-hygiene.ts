// Text from people, pages and models is stored as it came, except for what storage cannot hold
// (Postgres text and jsonb reject NUL) and what no thread needs (more than Slack's own limit):
// such text is mapped or cut with a visible mark, never refused or lost silently.

/** Longest message text Hippo stores (Slack's own limit for a message is 40,000 characters). */
export const maxMessageChars = 40_000;

/** NUL becomes U+FFFD (the replacement character): Postgres cannot store it. */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/** `text` cut to `limit` characters, ending with a mark that says how much was left out. */
export function capText(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const mark = `\n[… ${(text.length - limit).toLocaleString('en-US')} more characters were cut]`;
  // Never split a surrogate pair: the cut would leave half a character.
  let end = Math.max(0, limit - mark.length);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${mark}`;
}

/** Every string inside a JSON-like value made storable (for jsonb columns). */
export function storableJson<T>(value: T): T {
  // JSON.parse of JSON.stringify output is JSON by construction, of the same shape as `value`.
  return JSON.parse(JSON.stringify(value, (_key, inner: unknown) => (typeof inner === 'string' ? storableText(inner) : inner))) as T;
}

/**
 * A name that is safe in a path and in a line Hippo writes: letters, digits and `._-+()@,` kept,
 * everything else `_`, at most 100 characters, never hidden or empty.
 */
export function safeFileName(name: string): string {
  const cleaned = name.normalize('NFC').replace(/[^\p{L}\p{N}._\-+()@, ]/gu, '_').replace(/\s+/g, ' ').trim().replace(/^[.\s]+/, '');
  const cut = cleaned.length > 100 ? `${cleaned.slice(0, 60)}…${cleaned.slice(-39)}` : cleaned;
  return cut === '' ? 'file' : cut;
}
