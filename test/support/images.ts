// Real images for the image tests (R22), made with sharp: noise does not compress, so a photo of
// a chosen size in bytes is quick to make.
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';

/** A JPEG of noise, `width`×`height`; 4000×3000 at the defaults is about 4 MiB, like a 12 MP phone photo. */
export function noiseJpeg(width = 4000, height = 3000, options: { quality?: number; blur?: number } = {}): Promise<Buffer> {
  const raw = randomBytes(width * height * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } }).blur(options.blur ?? 0.8).jpeg({ quality: options.quality ?? 80 }).toBuffer();
}

/** A PNG of noise, `width`×`height`: about 3 bytes a pixel, as noise does not compress (a screenshot's size in bytes). */
export function noisePng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** A PNG of one colour (small in bytes whatever its size in pixels). */
export function flatPng(width: number, height: number, colour = { r: 200, g: 40, b: 40 }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: colour } }).png().toBuffer();
}

/** PNG's eight signature bytes followed by text: what a mislabelled text file looks like. */
export function fakePng(text = 'this is not an image, only text after a PNG signature'): Buffer {
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from(text)]);
}

/** What sharp reads in a data URL's bytes. */
export async function dataUrlImage(url: string): Promise<{ type: string; width: number; height: number; base64Chars: number }> {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match) throw new Error('not a base64 data URL');
  const metadata = await sharp(Buffer.from(match[2]!, 'base64')).metadata();
  return { type: `image/${metadata.format}`, width: metadata.width, height: metadata.height, base64Chars: match[2]!.length };
}
