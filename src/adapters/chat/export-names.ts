// File names for a memory export (docs/security.md "Security and limits"): a document's path comes from the
// model or a person, so it is mapped to a relative name that every filesystem accepts and shows
// as it is: no "..", no control or bidirectional-override characters (a name that reads backwards),
// no characters Windows refuses, no reserved device names (CON, NUL, COM1…), no part over 100 bytes
// (cut, with a hash of the original so two long names stay apart), and no two documents on one
// name, not even on a filesystem that ignores case.
import { createHash } from 'node:crypto';

/** Longest part of a name, in UTF-8 bytes (filesystems allow 255; archives nest parts). */
const maxPartBytes = 100;
/** Deepest folder nesting kept; deeper parts are joined into the last. */
const maxDepth = 8;

/** C0 and C1 controls, and the marks and overrides that change the direction text is shown in. */
export const invisible = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;
/** Characters Windows refuses in a name. */
const refused = /[<>:"|?*]/g;
/** Device names Windows reserves, with or without an extension. */
const reserved = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;

/** One part of a path made safe; '' when nothing of it is left. */
export function safePart(raw: string): string {
  let part = raw.normalize('NFC').replace(invisible, '').replace(refused, '_').trim();
  // Windows drops trailing dots and spaces, so "a." and "a" would meet.
  part = part.replace(/[. ]+$/, '');
  if (part === '' || part === '.' || part === '..') return '';
  if (reserved.test(part)) part = `_${part}`;
  return truncated(part, raw);
}

/** A relative path without "..", ".", empty parts or characters unpackers refuse (zip slip). */
export function safePath(path: string): string {
  const parts = path.split(/[\\/]+/).map(safePart).filter((part) => part !== '');
  if (parts.length > maxDepth) parts.splice(maxDepth - 1, parts.length, truncated(parts.slice(maxDepth - 1).join('_'), path));
  return parts.length > 0 ? parts.join('/') : 'untitled.md';
}

/**
 * Safe names for documents' paths, one per path in order, never two alike even when case is
 * ignored: a second "notes.md" (say "Notes.md", or "notes.md\u202e" once cleaned) becomes
 * "notes~2.md". A name is also never a folder of another ("a.md" and "a.md/b.md").
 */
export function exportNames(paths: readonly string[]): string[] {
  const taken = new Set<string>();
  const key = (name: string) => name.toLowerCase();
  const folders = new Set<string>();
  for (const path of paths) {
    const parts = safePath(path).split('/');
    for (let depth = 1; depth < parts.length; depth += 1) folders.add(key(parts.slice(0, depth).join('/')));
  }
  return paths.map((path) => {
    const base = safePath(path);
    let name = base;
    for (let copy = 2; taken.has(key(name)) || folders.has(key(name)); copy += 1) name = withSuffix(base, `~${copy}`);
    taken.add(key(name));
    return name;
  });
}

/** `name` with `suffix` before its extension ("notes.md" → "notes~2.md"). */
function withSuffix(name: string, suffix: string): string {
  const slash = name.lastIndexOf('/');
  const dot = name.lastIndexOf('.');
  return dot > slash + 1 ? `${name.slice(0, dot)}${suffix}${name.slice(dot)}` : `${name}${suffix}`;
}

/** `part` cut to maxPartBytes with a hash of `original` and its extension kept. */
function truncated(part: string, original: string): string {
  if (Buffer.byteLength(part) <= maxPartBytes) return part;
  const hash = createHash('sha256').update(original).digest('hex').slice(0, 8);
  const dot = part.lastIndexOf('.');
  const extension = dot > 0 && part.length - dot <= 10 ? part.slice(dot) : '';
  const room = maxPartBytes - Buffer.byteLength(`~${hash}${extension}`);
  // At most `room` characters fit (each is a byte or more); then whole characters go until it fits.
  const stem = [...part.slice(0, Math.min(part.length - extension.length, room * 2))].slice(0, room);
  while (Buffer.byteLength(stem.join('')) > room) stem.pop();
  return `${stem.join('')}~${hash}${extension}`;
}
