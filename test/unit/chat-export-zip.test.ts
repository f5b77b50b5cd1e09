// The export's names (every filesystem accepts them, no two alike) and its zip writer (async,
// refuses what it cannot write without ZIP64).
import { describe, expect, it } from 'vitest';
import { exportNames, safePart, safePath } from '../../src/adapters/chat/export-names.js';
import { maxZipEntries, ZipWriter, zip } from '../../src/adapters/chat/zip.js';
import { unzip } from '../support/unzip.js';

describe('export names', () => {
  it('drops control characters and the marks that turn text around', () => {
    expect(safePath('invoice\u202eexe.md')).toBe('invoiceexe.md');
    expect(safePath('a\u200fb\u2066c\u2069\u061c.md')).toBe('abc.md');
    expect(safePath('tab\there\u0007\u0085.md')).toBe('tabhere.md');
  });

  it('keeps away from Windows: refused characters, reserved device names, trailing dots and spaces', () => {
    expect(safePath('C:\\notes\\a?.md')).toBe('C_/notes/a_.md');
    expect(safePath('CON')).toBe('_CON');
    expect(safePath('docs/nul.txt')).toBe('docs/_nul.txt');
    expect(safePath('com1.md')).toBe('_com1.md');
    expect(safePath('Lpt9')).toBe('_Lpt9');
    expect(safePath('console.md')).toBe('console.md');
    expect(safePath('notes. ')).toBe('notes');
    expect(safePath('../../etc/passwd')).toBe('etc/passwd');
    expect(safePath('\u202e/..')).toBe('untitled.md');
  });

  it('cuts an over-long part to 100 bytes with a hash of the original, its extension kept', () => {
    const long = `${'é'.repeat(300)}.md`;
    const part = safePart(long);
    expect(Buffer.byteLength(part)).toBeLessThanOrEqual(100);
    expect(part).toMatch(/^é+~[0-9a-f]{8}\.md$/);
    // Two long names that begin alike stay apart.
    expect(safePart(`${'x'.repeat(200)}a.md`)).not.toBe(safePart(`${'x'.repeat(200)}b.md`));
    // A 2 MiB name costs linear time and still fits.
    expect(Buffer.byteLength(safePath('y'.repeat(2 * 1024 * 1024)))).toBeLessThanOrEqual(100);
    expect(safePath(Array.from({ length: 50 }, (_, index) => `d${index}`).join('/')).split('/')).toHaveLength(8);
  });

  it('gives no two documents one name, even where case is ignored or a name is another\'s folder', () => {
    expect(exportNames(['notes.md', 'Notes.md', 'notes.md\u202e', 'NOTES.MD'])).toEqual(['notes.md', 'Notes~2.md', 'notes~3.md', 'NOTES~4.MD']);
    expect(exportNames(['a.md', 'a.md/b.md'])).toEqual(['a~2.md', 'a.md/b.md']);
    expect(exportNames(['CON', '_CON'])).toEqual(['_CON', '_CON~2']);
  });
});

describe('zip writer', () => {
  it('writes what unzip reads back, compressed off the event loop', async () => {
    const modified = new Date('2026-12-07T10:00:00Z');
    const archive = await zip([{ name: 'a.md', data: Buffer.from('hello '.repeat(1000)), modified }, { name: 'dir/ü.md', data: Buffer.alloc(0), modified }]);
    const files = unzip(archive);
    expect([...files.keys()]).toEqual(['a.md', 'dir/ü.md']);
    expect(files.get('a.md')?.data.toString()).toBe('hello '.repeat(1000));
    expect(files.get('a.md')?.modified).toEqual(modified);
  });

  it('refuses the 65,536th file clearly instead of writing a count that wraps (no ZIP64)', async () => {
    const writer = new ZipWriter();
    const entry = await writer.prepare({ name: 'x', data: Buffer.alloc(0), modified: new Date() });
    for (let index = 0; index < maxZipEntries; index += 1) writer.append(entry);
    expect(() => writer.append(entry)).toThrow(new RangeError('a zip holds at most 65535 files here (no ZIP64)'));
    const archive = writer.finish();
    expect(archive.readUInt16LE(archive.length - 22 + 10)).toBe(maxZipEntries);
    expect(writer.bytes).toBe(archive.length);
  });
});
