// The image header reader (core/image-header.ts, R22): type and size of real PNG, JPEG, GIF
// and WebP files as sharp wrote them, and null for a signature without a valid header behind it.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { fitByHeader } from '../../src/core/loop/attachments.js';
import { claimedImageType, maxHeaderScanBytes, readImageHeader } from '../../src/core/image-header.js';
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { fakePng, flatPng } from '../support/images.js';

const canvas = (width: number, height: number) => sharp({ create: { width, height, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 0.5 } } });

describe('readImageHeader', () => {
  it('reads the type and size of each format, whatever its encoding', async () => {
    expect(readImageHeader(await canvas(300, 7).png().toBuffer())).toEqual({ type: 'image/png', width: 300, height: 7 });
    expect(readImageHeader(await canvas(301, 9).jpeg().toBuffer())).toEqual({ type: 'image/jpeg', width: 301, height: 9 });
    expect(readImageHeader(await canvas(302, 11).jpeg({ progressive: true }).toBuffer())).toEqual({ type: 'image/jpeg', width: 302, height: 11 });
    expect(readImageHeader(await canvas(303, 13).gif().toBuffer())).toEqual({ type: 'image/gif', width: 303, height: 13 });
    expect(readImageHeader(await sharp({ create: { width: 304, height: 15, channels: 3, background: 'red' } }).webp().toBuffer())).toEqual({ type: 'image/webp', width: 304, height: 15 });
    expect(readImageHeader(await canvas(305, 17).webp({ lossless: true }).toBuffer())).toEqual({ type: 'image/webp', width: 305, height: 17 });
    // Alpha with lossy compression, or EXIF: the extended (VP8X) header.
    expect(readImageHeader(await canvas(9_001, 2).webp().withMetadata().toBuffer())).toEqual({ type: 'image/webp', width: 9_001, height: 2 });
  });

  it('reads a JPEG whose frame header comes after large metadata segments', async () => {
    const jpeg = await canvas(40, 30).jpeg().toBuffer();
    const comment = Buffer.concat([Buffer.from([0xff, 0xfe, 0xff, 0xff]), Buffer.alloc(0xfffd, 0x20)]);
    const padded = Buffer.concat([jpeg.subarray(0, 2), comment, comment, jpeg.subarray(2)]);
    expect(readImageHeader(padded)).toEqual({ type: 'image/jpeg', width: 40, height: 30 });
    // Beyond the scan cap it stops looking: such a file is not shown as an image.
    const far = Buffer.concat([jpeg.subarray(0, 2), ...Array.from({ length: Math.ceil(maxHeaderScanBytes / comment.length) + 1 }, () => comment), jpeg.subarray(2)]);
    expect(readImageHeader(far)).toBeNull();
  });

  it('finds no header behind a signature followed by anything else', async () => {
    expect(claimedImageType(fakePng())).toBe('image/png');
    expect(readImageHeader(fakePng())).toBeNull();
    expect(readImageHeader(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 2]))).toBeNull();
    expect(readImageHeader(Buffer.from([0xff, 0xd8, 0xff]))).toBeNull();
    expect(readImageHeader(Buffer.from('GIF89a'))).toBeNull();
    expect(readImageHeader(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBeNull();
    const png = await flatPng(10, 10);
    const zeroWide = Buffer.from(png);
    zeroWide.writeUInt32BE(0, 16);
    expect(readImageHeader(zeroWide)).toBeNull();
    expect(readImageHeader(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeNull();
  });
});

describe('fitByHeader (no decoder wired)', () => {
  it('shows what fits as it is, and describes the rest', async () => {
    const limits = imageLimitsFor('anthropic', 8);
    const png = await flatPng(20, 10);
    expect(fitByHeader(png, limits)).toMatchObject({ shown: true, mimeType: 'image/png', width: 20, height: 10, shrunkFrom: null });
    expect(fitByHeader(await flatPng(8_001, 1), limits)).toEqual({ shown: false, reason: 'too large to show (8001×1 px; the model takes 8000 px a side)' });
    expect(fitByHeader(await flatPng(2_001, 1), imageLimitsFor('anthropic', 21))).toMatchObject({ shown: false });
    expect(fitByHeader(fakePng(), limits)).toEqual({ shown: false, reason: 'its bytes are not a valid image' });
    expect(fitByHeader(Buffer.concat([png, Buffer.alloc(3_932_161 - png.length)]), limits)).toEqual({ shown: false, reason: 'too large to show (over 3.8 MB)' });
    expect(fitByHeader(Buffer.concat([png, Buffer.alloc(3_932_160 - png.length)]), limits)).toMatchObject({ shown: true });
  });
});
