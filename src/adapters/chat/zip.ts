// A minimal ZIP writer (PKWARE APPNOTE 6.3: local headers, DEFLATE, central directory): enough
// for an export of text files, without a dependency. UTF-8 names (flag bit 11). Entries are
// compressed on libuv's thread pool (async zlib), one at a time, so a large export never holds the
// event loop; the caller sees each entry's size before adding it (to keep within its caps). No
// ZIP64: more than 65,535 files or 4 GiB is refused with a clear error, never written wrong.
import { promisify } from 'node:util';
import { crc32, deflateRaw } from 'node:zlib';

const deflate = promisify(deflateRaw);

/** Most files a ZIP without ZIP64 holds. */
export const maxZipEntries = 65_535;
/** Largest offset or size a ZIP without ZIP64 records. */
const maxZipBytes = 0xffff_ffff;
/** The end of central directory record. */
const endRecordBytes = 22;

/** One file of the archive. */
export interface ZipEntry {
  /** Path inside the archive, with `/` separators. */
  name: string;
  data: Buffer;
  modified: Date;
}

/** An entry compressed and ready to append: `bytes` is what it adds to the archive. */
export interface PreparedEntry {
  readonly local: Buffer;
  readonly compressed: Buffer;
  readonly central: Buffer;
  readonly bytes: number;
}

/** Builds an archive entry by entry. */
export class ZipWriter {
  private readonly parts: Buffer[] = [];
  private readonly central: Buffer[] = [];
  private offset = 0;
  private centralBytes = 0;

  /** Files appended so far. */
  get entries(): number {
    return this.central.length;
  }

  /** The archive's size if it were finished now. */
  get bytes(): number {
    return this.offset + this.centralBytes + endRecordBytes;
  }

  /** Compresses `entry` (off the event loop); nothing is appended yet. */
  async prepare(entry: ZipEntry): Promise<PreparedEntry> {
    const name = Buffer.from(entry.name, 'utf8');
    const compressed = await deflate(entry.data);
    const common = fileHeader(name, entry, compressed.length);
    const local = Buffer.concat([u32(0x04034b50), common, name]);
    // The offset is filled in when appended.
    const central = Buffer.concat([u32(0x02014b50), u16(20), common, u16(0), u16(0), u16(0), u32(0), u32(0), name]);
    return { local, compressed, central, bytes: local.length + compressed.length + central.length };
  }

  /** Appends a prepared entry; past 65,535 files or 4 GiB it throws a RangeError and appends nothing. */
  append(entry: PreparedEntry): void {
    if (this.central.length >= maxZipEntries) throw new RangeError(`a zip holds at most ${maxZipEntries} files here (no ZIP64)`);
    if (this.bytes + entry.bytes > maxZipBytes) throw new RangeError('a zip holds at most 4 GiB here (no ZIP64)');
    const central = Buffer.from(entry.central);
    central.writeUInt32LE(this.offset, 42);
    this.parts.push(entry.local, entry.compressed);
    this.central.push(central);
    this.offset += entry.local.length + entry.compressed.length;
    this.centralBytes += central.length;
  }

  /** Compresses and appends `entry`. */
  async add(entry: ZipEntry): Promise<void> {
    this.append(await this.prepare(entry));
  }

  /** The archive's bytes. */
  finish(): Buffer {
    const count = this.central.length;
    const end = Buffer.concat([u32(0x06054b50), u16(0), u16(0), u16(count), u16(count), u32(this.centralBytes), u32(this.offset), u16(0)]);
    return Buffer.concat([...this.parts, ...this.central, end]);
  }
}

/** The archive of `entries`, compressed one by one off the event loop. */
export async function zip(entries: readonly ZipEntry[]): Promise<Buffer> {
  const writer = new ZipWriter();
  for (const entry of entries) await writer.add(entry);
  return writer.finish();
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
