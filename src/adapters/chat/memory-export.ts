// `memory export` (docs/product.md "Review memory"): a space's memory documents as Markdown files
// with front matter (version, author, date) under documents/, and their versions under history/, in
// a zip that people can read, diff, or keep elsewhere. Bounded (docs/security.md "Security and limits"): history
// is read a page at a time, newest first, and compressed off the event loop; past a cap of versions,
// of text read or of archive bytes the rest is left out, and README.md in the zip says what. Names
// come from the model or people: export-names.ts makes them safe on every filesystem, and the two
// roots keep a document named "history/…" from ever meeting a version's file.
import type { DocumentAuthor, DocumentStore, DocumentSummary, DocumentVersionRecord } from '../../core/store.js';
import { exportNames, invisible } from './export-names.js';
import { ZipWriter, type ZipEntry } from './zip.js';

export { safePath } from './export-names.js';

/** What one export may hold; past any of them the rest is left out and README.md says so. */
export interface ExportCaps {
  /** Versions under history/ (the newest of each document first). */
  versions: number;
  /** Text read and compressed, in bytes. */
  textBytes: number;
  /** The zip's size (Discord takes 10 MiB from a bot). */
  archiveBytes: number;
}

export const exportCaps: ExportCaps = { versions: 1_000, textBytes: 64 * 1024 * 1024, archiveBytes: 8 * 1024 * 1024 };

/** Versions read from the database at a time. */
const pageSize = 25;
/** Room kept for README.md at the end. */
const readmeRoom = 16 * 1024;
/** Documents README.md names one by one; the rest are counted. */
const namedInReadme = 100;

/** What an export holds, and what it left out. */
export interface MemoryExport {
  /** The zip's bytes. */
  zip: Buffer;
  documents: number;
  versions: number;
  left: { documents: number; versions: number };
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
export async function memoryExportFile(documents: Pick<DocumentStore, 'spaceDocuments' | 'history'>, spaceId: string, now = new Date(), caps = exportCaps): Promise<MemoryExportFile | null> {
  const exported = await exportMemorySpace(documents, spaceId, caps);
  if (exported.documents + exported.left.documents === 0) return null;
  const name = `hippo-memory-${now.toISOString().slice(0, 10)}.zip`;
  const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
  let summary = `${plural(exported.documents, 'memory document')} as Markdown with front matter under documents/, and ${plural(exported.versions, 'version')} under history/.`;
  const { left } = exported;
  if (left.documents + left.versions > 0) {
    const what = [left.documents > 0 ? plural(left.documents, 'document') : '', left.versions > 0 ? plural(left.versions, 'older version') : ''].filter(Boolean).join(' and ');
    summary += ` Left out: ${what}, past the export's cap (${describeCaps(caps)}); README.md in the zip lists them.`;
  }
  return { name, summary, data: exported.zip };
}

/** The space's live documents (no session TODO.md) and their histories, as a zip within `caps`. */
export async function exportMemorySpace(documents: Pick<DocumentStore, 'spaceDocuments' | 'history'>, spaceId: string, caps = exportCaps): Promise<MemoryExport> {
  const summaries = await documents.spaceDocuments(spaceId);
  const names = exportNames(summaries.map(({ document }) => document.path));
  const writer = new ZipWriter();
  let text = 0;
  let full = false;
  /**
   * Adds the entry if it fits the caps. A document that does not fit is left out alone (a smaller
   * one may still fit); once a version does not, history stops there (older ones are left out).
   */
  const add = async (entry: ZipEntry, stopsHistory: boolean): Promise<boolean> => {
    if (!full && text + entry.data.length <= caps.textBytes) {
      const prepared = await writer.prepare(entry);
      if (writer.bytes + prepared.bytes + readmeRoom <= caps.archiveBytes) {
        text += entry.data.length;
        writer.append(prepared);
        return true;
      }
    }
    if (stopsHistory) full = true;
    return false;
  };

  const outcomes: Array<{ path: string; name: string; included: boolean; versions: number; total: number }> = [];
  for (const [index, summary] of summaries.entries()) {
    const name = names[index] ?? 'untitled.md';
    outcomes.push({ path: summary.document.path, name, included: await add(currentEntry(name, summary), false), versions: 0, total: 0 });
  }
  let versions = 0;
  for (const [index, { document }] of summaries.entries()) {
    const outcome = outcomes[index]!;
    for (let offset = 0; ; offset += pageSize) {
      const wanted = full ? 1 : Math.min(pageSize, caps.versions - versions);
      const page = await documents.history(document.id, { offset: full ? 0 : offset, limit: Math.max(1, wanted) });
      outcome.total = page.total;
      if (full || versions >= caps.versions) break;
      for (const version of page.versions) {
        if (versions >= caps.versions || !(await add(versionEntry(outcome.name, version), true))) break;
        outcome.versions += 1;
        versions += 1;
      }
      if (full || versions >= caps.versions || offset + pageSize >= page.total) break;
    }
  }
  await writer.add({ name: 'README.md', data: Buffer.from(readme(outcomes, caps), 'utf8'), modified: new Date() });
  const included = outcomes.filter((outcome) => outcome.included).length;
  const leftVersions = outcomes.reduce((sum, outcome) => sum + outcome.total - outcome.versions, 0);
  return { zip: writer.finish(), documents: included, versions, left: { documents: outcomes.length - included, versions: leftVersions } };
}

/** "1,000 versions, 64 MiB of text, a zip of 8 MiB". */
function describeCaps(caps: ExportCaps): string {
  const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
  return `${caps.versions.toLocaleString('en-US')} versions, ${mib(caps.textBytes)} of text, a zip of ${mib(caps.archiveBytes)}`;
}

/** README.md: how the zip is laid out, and what it left out (by document). */
function readme(outcomes: Array<{ path: string; name: string; included: boolean; versions: number; total: number }>, caps: ExportCaps): string {
  const lines = [
    '# Hippo memory export',
    '',
    '- `documents/` holds each memory document as it is now, as Markdown with front matter (its path, version, author, date).',
    '- `history/<document>/v0001.md`… holds its versions, newest first as far as the export went.',
    '- File names are made safe for every filesystem; the front matter keeps each document\'s own path.',
    '',
  ];
  const cut = outcomes.filter((outcome) => !outcome.included || outcome.versions < outcome.total);
  if (cut.length === 0) return [...lines, 'Nothing was left out.', ''].join('\n');
  lines.push(`## Left out`, '', `This export stopped at its cap (${describeCaps(caps)}). Left out:`, '');
  for (const outcome of cut.slice(0, namedInReadme)) {
    const versions = outcome.total - outcome.versions;
    const parts = [!outcome.included ? 'the document itself' : '', versions > 0 ? `${versions} of its ${outcome.total} versions (the oldest)` : ''].filter(Boolean);
    lines.push(`- ${JSON.stringify(outcome.path)}: ${parts.join(', and ')}`);
  }
  if (cut.length > namedInReadme) lines.push(`- and ${cut.length - namedInReadme} more documents`);
  lines.push('', 'Memory review in chat (`memory`, its history view) shows every version.', '');
  return lines.join('\n');
}

function currentEntry(name: string, { document, lastChange }: DocumentSummary): ZipEntry {
  const front = frontMatter({ path: document.path, version: document.version, author: authorName(lastChange.author), date: lastChange.createdAt.toISOString(), ...(document.pinnedLines.length ? { pinned: document.pinnedLines } : {}) });
  return { name: `documents/${name}`, data: Buffer.from(front + document.content, 'utf8'), modified: lastChange.createdAt };
}

function versionEntry(name: string, version: DocumentVersionRecord): ZipEntry {
  return { name: `history/${name}/v${String(version.version).padStart(4, '0')}.md`, data: Buffer.from(versionText(version), 'utf8'), modified: version.createdAt };
}

/** One version with who wrote it, when and why. */
function versionText(version: DocumentVersionRecord): string {
  return frontMatter({
    path: version.path, version: version.version, author: authorName(version.author), author_kind: version.author.kind,
    date: version.createdAt.toISOString(), ...(version.reason ? { reason: version.reason } : {}), ...(version.deleted ? { deleted: true } : {}),
    ...(version.revertedRunId ? { reverts_memory_run: version.revertedRunId } : {}),
  }) + (version.deleted ? '' : version.content);
}

/**
 * YAML front matter; strings as JSON strings (valid YAML whatever they hold), with invisible and
 * direction-changing characters written as \u escapes so a path shows as it is.
 */
function frontMatter(fields: Record<string, string | number | boolean | string[]>): string {
  const quoted = (value: string | string[]) => JSON.stringify(value).replace(invisible, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const lines = Object.entries(fields).map(([key, value]) => `${key}: ${typeof value === 'string' || Array.isArray(value) ? quoted(value) : String(value)}`);
  return `---\n${lines.join('\n')}\n---\n\n`;
}

function authorName(author: DocumentAuthor): string {
  return author.kind === 'person' ? author.name || author.userId : author.kind;
}

/** Exports under way, by person and space: one at a time each, on every surface (chat, App Home, terminal). */
const running = new Set<string>();

/**
 * Runs `work` unless an export for `key` (platform, person and space) is under way in this process;
 * then null, and the caller says so.
 */
export async function oneExportAtATime<T>(key: string, work: () => Promise<T>): Promise<T | null> {
  if (running.has(key)) return null;
  running.add(key);
  try {
    return await work();
  } finally {
    running.delete(key);
  }
}

/** The key of oneExportAtATime. */
export function exportKey(platform: string, userId: string, spaceId: string): string {
  return `${platform}:${userId}:${spaceId}`;
}

/** What a person is told when their export of the space is already under way. */
export const exportRunningText = '📦 An export of this memory for you is already under way; it comes when it is ready.';
