// Images in a context are bounded (docs/product.md "Share files"): every request shows only the latest few
// distinct images within a byte budget, and describes the others in text with where their file is.
// Without this, each share of a 5 MiB image would be sent again in every call and every fork, and
// requests would grow until the service ran out of memory serializing them.
import type { ChatMessage, ContentPart } from '../messages.js';

/** How many images, and how many characters of image data URLs, one request shows. */
export interface ImageLimits {
  /** Images shown per request (the latest ones); older ones are described in text. */
  maxImages: number;
  /** Characters of image data URLs per request (base64: 4 characters per 3 bytes). */
  maxImageChars: number;
}

// "(attached: …, saved as files/x.png; shown below)": a steer's attachment lines (prompts.ts), one
// per image part, in order. Quoted chat lines start with "> ", so they cannot pass for one.
// A saved path has no ";" (safeFileName), so a note between it and "shown below" is not part of it.
/** A steer's attachment line of a shown image (its path in group 1). */
export const shownSavedAs = /^\(attached: .*saved as ([^;\n]+)(?:;[^;\n]*)*; shown below\)$/gm;

/** The data URLs of every image part in `messages`. */
export function imageUrls(messages: readonly ChatMessage[]): Set<string> {
  const urls = new Set<string>();
  for (const message of messages) {
    if (typeof message.content === 'string' || !message.content) continue;
    for (const part of message.content) if (part.type === 'image_url') urls.add(part.image_url.url);
  }
  return urls;
}

/**
 * The messages as a request shows them: from the newest back, an image is kept while fewer than
 * `maxImages` are kept and its data URL fits in what is left of `maxImageChars`; a repeat of a kept
 * image and every image beyond the limits become a text part. Messages without a change are the
 * same objects, so the function is cheap and deterministic (the prompt cache sees the same bytes).
 */
export function boundImages(messages: readonly ChatMessage[], limits: ImageLimits): ChatMessage[] {
  const kept = new Set<string>();
  let chars = 0;
  const result = [...messages];
  for (let index = result.length - 1; index >= 0; index -= 1) {
    const message = result[index]!;
    if (typeof message.content === 'string' || !message.content?.some((part) => part.type === 'image_url')) continue;
    const paths = savedPaths(message.content);
    let imageIndex = message.content.filter((part) => part.type === 'image_url').length;
    const parts: ContentPart[] = [];
    let changed = false;
    for (let partIndex = message.content.length - 1; partIndex >= 0; partIndex -= 1) {
      const part = message.content[partIndex]!;
      if (part.type !== 'image_url') {
        parts.unshift(part);
        continue;
      }
      imageIndex -= 1;
      const url = part.image_url.url;
      if (kept.has(url)) {
        parts.unshift({ type: 'text', text: '(this image again: the same bytes are shown further below)' });
        changed = true;
      } else if (kept.size < limits.maxImages && chars + url.length <= limits.maxImageChars) {
        kept.add(url);
        chars += url.length;
        parts.unshift(part);
      } else {
        parts.unshift({ type: 'text', text: omittedImageText(paths[imageIndex]) });
        changed = true;
      }
    }
    if (changed) result[index] = { ...message, content: parts };
  }
  return result;
}

/** The text that stands for an image a request no longer shows. */
function omittedImageText(savedAs: string | undefined): string {
  const where = savedAs ? ` It is saved in the workspace as ${savedAs}.` : '';
  return `(An earlier image is no longer shown, so requests stay within the image limits.${where})`;
}

/** Workspace paths of the images a steer message shows, in the order of its image parts. */
export function savedPaths(parts: readonly ContentPart[]): string[] {
  const text = parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  return [...text.matchAll(shownSavedAs)].map((match) => match[1]!);
}
