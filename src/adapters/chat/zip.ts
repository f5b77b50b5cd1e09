// A minimal ZIP writer (PKWARE APPNOTE 6.3: local headers, DEFLATE, central directory): enough
// for an export of text files, without a dependency. UTF-8 names (flag bit 11); no ZIP64, so
// under 65,535 files and 4 GiB, far beyond a memory space.
import { deflateRawSync, crc32 } from 'node:zlib';

/** One file of the archive. */
export interface ZipEntry {
  /** Path inside the archive, with `/` separators. */
  name: string;
  data: Buffer;
  modified: Date;
}

/** The archive's bytes. */
export function zip(entries: readonly ZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const compressed = deflateRawSync(entry.data);
    const common = fileHeader(name, entry, compressed.length);
    const local = Buffer.concat([u32(0x04034b50), common, name]);
    central.push(Buffer.concat([u32(0x02014b50), u16(20), common, u16(0), u16(0), u16(0), u32(0), u32(offset), name]));
    parts.push(local, compressed);
    offset += local.length + compressed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(entries.length), u16(entries.length), u32(directory.length), u32(offset), u16(0)]);
  return Buffer.concat([...parts, directory, end]);
}

/** The fields local and central headers share: version, flags, method, time, CRC, sizes, name length. */
function fileHeader(name: Buffer, entry: ZipEntry, compressedSize: number): Buffer {
  const { time, date } = dosTime(entry.modified);
  return Buffer.concat([
    u16(20), u16(0x0800), u16(8), u16(time), u16(date),
    u32(crc32(entry.data)), u32(compressedSize), u32(entry.data.length), u16(name.length), u16(0),
  ]);
}

/** MS-DOS date and time (2-second resolution, years 1980–2107), in UTC. */
function dosTime(at: Date): { time: number; date: number } {
  const year = Math.min(Math.max(at.getUTCFullYear(), 1980), 2107);
  return {
    time: (at.getUTCHours() << 11) | (at.getUTCMinutes() << 5) | Math.floor(at.getUTCSeconds() / 2),
    date: ((year - 1980) << 9) | ((at.getUTCMonth() + 1) << 5) | at.getUTCDate(),
  };
}

function u16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16LE(value);
  return buffer;
}

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32LE(value >>> 0);
  return buffer;
}
