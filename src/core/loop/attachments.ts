// Files and images people share with a message (docs/product.md "Share files"), as the worker takes them:
// saved through the port the service wires in (attachment-saver.ts), each image shown once, and
// R22's fallback check of an image when no decoder is wired.
import type { AttachmentSaver, FittedImage, SavedAttachment } from '../attachment-saver.js';
import type { SessionRecord, SteerRecord } from '../store.js';
import { readImageHeader } from '../image-header.js';
import { base64Chars, type ProviderImageLimits } from '../image-limits.js';
import { formatSize } from '../format-size.js';

/**
 * R22 without a decoder (core's fallback when no ImageFitter is wired): the header must read, and
 * the image must already fit; nothing is shrunk.
 */
export function fitByHeader(bytes: Buffer, limits: ProviderImageLimits): FittedImage {
  const header = readImageHeader(bytes);
  if (!header) return { shown: false, reason: 'its bytes are not a valid image' };
  if (!limits.types.has(header.type)) return { shown: false, reason: `${header.type} is not a type the model takes` };
  if (Math.max(header.width, header.height) > limits.maxSide) return { shown: false, reason: `too large to show (${header.width}×${header.height} px; the model takes ${limits.maxSide} px a side)` };
  if (base64Chars(bytes.length) > limits.maxBase64Chars) return { shown: false, reason: `too large to show (over ${formatSize(Math.floor((limits.maxBase64Chars / 4) * 3))})` };
  return { shown: true, mimeType: header.type, bytes, width: header.width, height: header.height, shrunkFrom: null };
}

/** The image types Chat Completions models take as image parts. */
export const modelImageTypes: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Saves the attachments of each steer, in order; by steer id. */
export async function saveAttachments(saver: AttachmentSaver, session: SessionRecord, steers: readonly SteerRecord[], signal: AbortSignal): Promise<Map<number, SavedAttachment[]>> {
  const saved = new Map<number, SavedAttachment[]>();
  for (const steer of steers) saved.set(steer.id, await saver.save(session, steer.attachments, signal));
  return saved;
}

/**
 * Identical bytes add no new image part: an image already in the context (`shown`, data URLs) or
 * earlier in these steers is kept as a file and named, not shown again. Steers in taking order.
 */
export function withoutRepeatedImages(saved: ReadonlyMap<number, SavedAttachment[]>, shown: ReadonlySet<string>): Map<number, SavedAttachment[]> {
  const seen = new Set(shown);
  const result = new Map<number, SavedAttachment[]>();
  for (const [steerId, files] of saved) {
    result.set(steerId, files.map((file) => {
      if (!file.imageUrl) return file;
      if (!seen.has(file.imageUrl)) {
        seen.add(file.imageUrl);
        return file;
      }
      return { ...file, imageUrl: null, note: 'the same image as one shown earlier' };
    }));
  }
  return result;
}
