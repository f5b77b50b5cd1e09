// Files and images people share with a message (docs/product.md "Share"). Core only names them and
// says how they reach the model; saving them (downloading from the platform into the session
// workspace) is a port the service wires in (tools/workspace-attachments.ts).
import type { Attachment, SessionRecord, SteerRecord } from '../store.js';
import { readImageHeader } from './image-header.js';
import { base64Chars, type ProviderImageLimits } from './image-limits.js';

/** What became of an attachment when the worker took its message. */
export interface SavedAttachment {
  /** The name as shown to the model (and the saved file's name): safe characters only. */
  name: string;
  mimeType: string | null;
  size: number;
  /** Workspace-relative path of the saved copy, or null when it was not saved. */
  savedAs: string | null;
  /** Why it was not saved, why an image is not shown, or how a shown one was changed (one phrase), else null. */
  note: string | null;
  /** The image as a data URL, when the model is shown images and this one fits. */
  imageUrl: string | null;
}

/** Saves attachments of a session's message into its workspace. */
export interface AttachmentSaver {
  /** One result per attachment, in order; never throws for one file (its `note` says what failed). */
  save(session: SessionRecord, attachments: readonly Attachment[], signal: AbortSignal): Promise<SavedAttachment[]>;
  /** R22: checks an image a tool returned and makes it fit the provider; absent: fitByHeader. */
  fitImage?(bytes: Buffer, signal: AbortSignal): Promise<FittedImage>;
}

/** An image a tool returned (MCP), to be shown to a model that accepts images. */
export interface ToolImage {
  mimeType: string;
  /** Base64 of the image bytes. */
  data: string;
}

/** An image made to fit a provider's limits (R22), or why it is not shown. */
export type FittedImage =
  | {
      shown: true;
      mimeType: string;
      /** The bytes to send: the original, or a smaller copy. */
      bytes: Buffer;
      width: number;
      height: number;
      /** The original's size when this is a smaller copy, else null. */
      shrunkFrom: { width: number; height: number } | null;
    }
  | { shown: false; reason: string };

/** Checks that bytes really are an image the provider takes, and makes them fit its limits (R22). */
export interface ImageFitter {
  /** Never throws for bad bytes (the result says why not); throws only when `signal` aborts. */
  fit(bytes: Buffer, signal: AbortSignal): Promise<FittedImage>;
}

/** How a shown image was changed to fit ("shrunk from 4000×3000 to 1568×1176 px to be shown"), or null. */
export function fittedNote(fitted: FittedImage): string | null {
  if (!fitted.shown || !fitted.shrunkFrom) return null;
  const { width, height } = fitted.shrunkFrom;
  if (width === fitted.width && height === fitted.height) return `converted to ${fitted.mimeType.replace(/^image\//, '').toUpperCase()} to be shown`;
  return `shrunk from ${width}×${height} to ${fitted.width}×${fitted.height} px to be shown`;
}

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

/** "12 KB", "3.4 MB" (binary units, as the limits are set). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MB`;
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

/** The line the model reads about one attachment, e.g. "(attached: report.csv, 12 KB, saved as files/report.csv)". */
export function attachmentLine(saved: SavedAttachment): string {
  const image = saved.mimeType?.startsWith('image/') ?? false;
  const parts = [saved.name, ...(image && saved.mimeType ? [saved.mimeType] : []), formatSize(saved.size)];
  // A shown image's note (it was shrunk) comes before "shown below", which image-budget.ts looks for.
  const note = saved.note ? `; ${saved.note}` : '';
  if (saved.savedAs) parts.push(`saved as ${saved.savedAs}${note}${saved.imageUrl ? '; shown below' : ''}`);
  else parts.push(`not saved: ${saved.note ?? 'unknown reason'}`);
  return `(attached: ${parts.join(', ')})`;
}

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
