// `memory export` (docs/product.md "Review memory"): a space's memory documents as Markdown files with
// front matter (version, author, date), and every version of each under history/, in a zip that
// people can read, diff, or keep elsewhere. Paths come from the model: they are made safe to unpack.
import type { DocumentAuthor, DocumentStore, DocumentVersionRecord } from '../../core/store.js';
import { zip, type ZipEntry } from './zip.js';

/** What an export holds. */
export interface MemoryExport {
  /** The zip's bytes. */
  zip: Buffer;
  documents: number;
  versions: number;
}

/** What an export of a space without documents says. */
export const emptyExportText = 'This memory has no documents yet: there is nothing to export.';

/** An export as a file to send: its name, one sentence saying what it holds, and its bytes. */
export interface MemoryExportFile {
  name: string;
  summary: string;
  data: Buffer;
}

/** The space's export as a file, or null when the space has no documents yet. */
export async function memoryExportFile(documents: Pick<DocumentStore, 'spaceDocuments' | 'versions'>, spaceId: string, now = new Date()): Promise<MemoryExportFile | null> {
  const exported = await exportMemorySpace(documents, spaceId);
  if (exported.documents === 0) return null;
  const name = `hippo-memory-${now.toISOString().slice(0, 10)}.zip`;
  const summary = `${exported.documents} memory document${exported.documents === 1 ? '' : 's'} as Markdown with front matter, and ${exported.versions} version${exported.versions === 1 ? '' : 's'} under history/.`;
  return { name, summary, data: exported.zip };
}

/** The space's live documents (no session TODO.md) and their histories, as a zip. */
export async function exportMemorySpace(documents: Pick<DocumentStore, 'spaceDocuments' | 'versions'>, spaceId: string): Promise<MemoryExport> {
  const entries: ZipEntry[] = [];
  let versions = 0;
  for (const { document, lastChange } of await documents.spaceDocuments(spaceId)) {
    const path = safePath(document.path);
    const current = frontMatter({ path: document.path, version: document.version, author: authorName(lastChange.author), date: lastChange.createdAt.toISOString(), ...(document.pinnedLines.length ? { pinned: document.pinnedLines } : {}) });
    entries.push({ name: path, data: Buffer.from(current + document.content, 'utf8'), modified: lastChange.createdAt });
    for (const version of [...(await documents.versions(document.id))].reverse()) {
      entries.push({ name: `history/${path}/v${String(version.version).padStart(4, '0')}.md`, data: Buffer.from(versionText(version), 'utf8'), modified: version.createdAt });
      versions += 1;
    }
  }
  return { zip: zip(entries), documents: entries.length - versions, versions };
}

/** One version with who wrote it, when and why. */
function versionText(version: DocumentVersionRecord): string {
  return frontMatter({
    path: version.path, version: version.version, author: authorName(version.author), author_kind: version.author.kind,
    date: version.createdAt.toISOString(), ...(version.reason ? { reason: version.reason } : {}), ...(version.deleted ? { deleted: true } : {}),
    ...(version.revertedRunId ? { reverts_memory_run: version.revertedRunId } : {}),
  }) + (version.deleted ? '' : version.content);
}

/** YAML front matter; strings as JSON strings (valid YAML whatever they hold). */
function frontMatter(fields: Record<string, string | number | boolean | string[]>): string {
  const lines = Object.entries(fields).map(([key, value]) => `${key}: ${typeof value === 'string' || Array.isArray(value) ? JSON.stringify(value) : String(value)}`);
  return `---\n${lines.join('\n')}\n---\n\n`;
}

function authorName(author: DocumentAuthor): string {
  return author.kind === 'person' ? author.name || author.userId : author.kind;
}

/** A relative path without "..", ".", empty parts or characters unpackers refuse (zip slip). */
export function safePath(path: string): string {
  const parts = path.split(/[\\/]+/).map((part) => part.replace(/[\u0000-\u001f:*?"<>|]/g, '_')).filter((part) => part !== '' && part !== '.' && part !== '..');
  return parts.length > 0 ? parts.join('/') : 'untitled.md';
}
