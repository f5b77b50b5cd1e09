// The type and size an image's header declares (R22), read without decoding it: PNG's IHDR, JPEG's
// SOF marker, GIF's logical screen, WebP's VP8/VP8L/VP8X chunk. It runs on bytes people and tools
// send, so it is linear in the bytes it looks at and stops at `maxHeaderScanBytes`: a JPEG whose
// frame header comes later than that (a huge EXIF block) is not taken as an image. A header that
// reads well proves little about the rest of the file; the image fitter decodes it (image-fitter.ts).

/** The type and pixel size an image's header declares. */
export interface ImageHeader {
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`. */
  type: string;
  width: number;
  height: number;
}

/** How far into a file the reader looks for the frame header, in bytes. */
export const maxHeaderScanBytes = 1024 * 1024;

/** The image type the first bytes claim (magic numbers only), or null: says what a file pretends to be. */
export function claimedImageType(bytes: Uint8Array): string | null {
  if (startsWith(bytes, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(bytes, 0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return 'image/webp';
  return null;
}

/**
 * The header of a PNG, JPEG, GIF or WebP image, or null when the bytes are none of those or their
 * header is broken (no IHDR where PNG has it, no frame header before the scan data, a zero side).
 */
export function readImageHeader(bytes: Uint8Array): ImageHeader | null {
  const type = claimedImageType(bytes);
  let size: { width: number; height: number } | null = null;
  if (type === 'image/png') size = pngSize(bytes);
  else if (type === 'image/jpeg') size = jpegSize(bytes);
  else if (type === 'image/gif') size = bytes.length >= 10 ? { width: u16le(bytes, 6), height: u16le(bytes, 8) } : null;
  else if (type === 'image/webp') size = webpSize(bytes);
  if (!type || !size || size.width <= 0 || size.height <= 0) return null;
  return { type, ...size };
}

// PNG: the signature, then the IHDR chunk first (length 13): width and height, big-endian.
function pngSize(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.length < 33 || u32be(bytes, 8) !== 13 || ascii(bytes, 12, 4) !== 'IHDR') return null;
  return { width: u32be(bytes, 16), height: u32be(bytes, 20) };
}

// JPEG: marker segments from offset 2; the first SOF0–SOF15 (not DHT C4, JPG C8, DAC CC) holds
// height then width. Each step moves forward by at least two bytes, so the walk is linear.
function jpegSize(bytes: Uint8Array): { width: number; height: number } | null {
  const end = Math.min(bytes.length, maxHeaderScanBytes);
  let offset = 2;
  while (offset + 4 <= end) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    // Fill bytes (0xFF) may precede a marker.
    if (marker === 0xff) {
      offset += 1;
      continue;
    }
    // Markers without a length: TEM and RST0–7 (none belong before the frame header, but they are harmless).
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    // Start of scan or end of image before any frame header: broken.
    if (marker === 0xda || marker === 0xd9) return null;
    const length = u16be(bytes, offset + 2);
    if (length < 2) return null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (offset + 9 > end) return null;
      return { height: u16be(bytes, offset + 5), width: u16be(bytes, offset + 7) };
    }
    offset += 2 + length;
  }
  return null;
}

// WebP: RIFF header (12 bytes), then the first chunk: VP8 (lossy), VP8L (lossless) or VP8X (extended).
function webpSize(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.length < 30) return null;
  const chunk = ascii(bytes, 12, 4);
  if (chunk === 'VP8 ') {
    // A key frame's start code, then 14-bit width and height (2 bits of scale above them).
    if (!startsWith(bytes, 23, [0x9d, 0x01, 0x2a])) return null;
    return { width: u16le(bytes, 26) & 0x3fff, height: u16le(bytes, 28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (bytes[20] !== 0x2f) return null;
    const bits = u32le(bytes, 21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') return { width: u24le(bytes, 24) + 1, height: u24le(bytes, 27) + 1 };
  return null;
}

function startsWith(bytes: Uint8Array, at: number, values: readonly number[]): boolean {
  return values.every((value, index) => bytes[at + index] === value);
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  if (bytes.length < at + length) return '';
  return String.fromCharCode(...bytes.subarray(at, at + length));
}

const u16be = (bytes: Uint8Array, at: number): number => (bytes[at]! << 8) | bytes[at + 1]!;
const u16le = (bytes: Uint8Array, at: number): number => bytes[at]! | (bytes[at + 1]! << 8);
const u24le = (bytes: Uint8Array, at: number): number => bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16);
const u32be = (bytes: Uint8Array, at: number): number => ((bytes[at]! << 24) >>> 0) + (bytes[at + 1]! << 16) + (bytes[at + 2]! << 8) + bytes[at + 3]!;
const u32le = (bytes: Uint8Array, at: number): number => (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
