// R22: an image reaches the model only when its bytes decode as the type they claim and fit the
// provider's documented limits (core/image-limits.ts); one that is too large is shrunk here,
// once, when it is saved or a tool returns it, never per request. The decoder is sharp (libvips):
// a maintained library whose prebuilt binaries install from the npm registry as platform packages
// (no download at install, no compiler), fast on a 12 MP photo (about 0.4 s and 30 MB here), and
// bounded: `limitInputPixels` refuses before decoding an image over `maxPixels`, and libvips
// streams rows, so a large PNG is not held whole. A header alone (image-header.ts) is read first,
// so a file that is not even an image never reaches the decoder.
import sharp from 'sharp';
import type { Metadata, Sharp } from 'sharp';
import { CancelledError } from '../core/errors.js';
import { formatSize } from '../core/format-size.js';
import type { FittedImage, ImageFitter } from '../core/attachment-saver.js';
import { claimedImageType, readImageHeader } from '../core/image-header.js';
import { base64Chars, type ProviderImageLimits } from '../core/image-limits.js';

// No cache of decoded images across calls (each image is fitted once), and one libvips thread per
// image: the service's other work keeps the machine's other core.
sharp.cache(false);
sharp.concurrency(1);

/** Most pixels decoded for one image (100 MP: a 48 MP phone photo passes, a decompression bomb does not). */
export const maxPixels = 100_000_000;

/** Tries at ever smaller sizes before an image that will not fit is described instead. */
const maxShrinkTries = 4;

/** Checks and shrinks images with sharp for one provider's limits. */
export class SharpImageFitter implements ImageFitter {
  constructor(readonly limits: ProviderImageLimits) {}

  async fit(bytes: Buffer, signal: AbortSignal): Promise<FittedImage> {
    const header = readImageHeader(bytes);
    if (!header) return { shown: false, reason: claimedImageType(bytes) ? `its bytes are not a valid ${typeName(claimedImageType(bytes)!)} image` : 'it is not an image the model takes' };
    if (header.width * header.height > maxPixels) return { shown: false, reason: `too large to show (${header.width}×${header.height} px; at most ${maxPixels / 1_000_000} MP are read)` };
    let metadata: Metadata;
    try {
      metadata = await decoder(bytes).metadata();
      throwIfAborted(signal);
      const animated = (metadata.pages ?? 1) > 1;
      const fits = this.limits.types.has(header.type) && (this.limits.animated || !animated)
        && Math.max(header.width, header.height) <= this.limits.maxSide && base64Chars(bytes.length) <= this.limits.maxBase64Chars;
      if (fits) {
        // Decoded whole (into a thumbnail, which reads every scan line): a cut or corrupt body fails here.
        await decoder(bytes).resize(64, 64, { fit: 'inside' }).raw().toBuffer();
        return { shown: true, mimeType: header.type, bytes, width: header.width, height: header.height, shrunkFrom: null };
      }
      return await this.shrink(bytes, metadata, signal);
    } catch (error) {
      if (error instanceof CancelledError) throw error;
      return invalid(header.type);
    }
  }

  /** A smaller copy: JPEG (PNG when the image has transparency), long side at most `shrinkSide`, smaller until it fits. */
  private async shrink(bytes: Buffer, metadata: Metadata, signal: AbortSignal): Promise<FittedImage> {
    // EXIF orientation is applied before resizing, so the copy is upright without its metadata.
    const upright = (metadata.orientation ?? 1) >= 5 ? { width: metadata.height, height: metadata.width } : { width: metadata.width, height: metadata.height };
    let side = Math.min(this.limits.shrinkSide, this.limits.maxSide, Math.max(upright.width, upright.height));
    const alpha = metadata.hasAlpha;
    for (let attempt = 0; attempt < maxShrinkTries; attempt += 1) {
      const pipeline = decoder(bytes).rotate().resize(side, side, { fit: 'inside', withoutEnlargement: true });
      const { data, info } = await (alpha ? pipeline.png({ compressionLevel: 9 }) : pipeline.jpeg({ quality: 85 })).toBuffer({ resolveWithObject: true });
      throwIfAborted(signal);
      if (base64Chars(data.length) <= this.limits.maxBase64Chars) {
        return { shown: true, mimeType: alpha ? 'image/png' : 'image/jpeg', bytes: data, width: info.width, height: info.height, shrunkFrom: upright };
      }
      side = Math.floor(side * 0.7);
    }
    return { shown: false, reason: `too large to show, even shrunk (over ${formatSize(Math.floor((this.limits.maxBase64Chars / 4) * 3))})` };
  }
}

/** A decoder that reads at most `maxPixels`, the first frame only, and fails on a cut or corrupt body. */
function decoder(bytes: Buffer): Sharp {
  return sharp(bytes, { limitInputPixels: maxPixels, failOn: 'truncated', animated: false });
}

function invalid(type: string): FittedImage {
  return { shown: false, reason: `its bytes are not a valid ${typeName(type)} image` };
}

function typeName(type: string): string {
  return type.replace(/^image\//, '').toUpperCase();
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new CancelledError(String(signal.reason ?? 'aborted'));
}
