// The attachment port (docs/product.md "Share files"): the service saves files shared with a message
// into the session workspace and makes images fit the provider (tools/workspace-attachments.ts,
// tools/image-fitter.ts); core names them and says how they reach the model (loop/attachments.ts).
import type { Attachment, SessionRecord } from './store.js';

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
