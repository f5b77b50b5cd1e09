// The memory browser's words (docs/product.md "Review memory"), the same on every platform: a space's
// documents with size, last change and last author; a document with its pinned lines marked; its
// history (author, time, reason, the thread it came from). Platforms add the buttons and links.
import { pinText } from '../../core/pinned-lines.js';
import type { DocumentAuthor, DocumentRecord, DocumentSummary, DocumentVersionRecord, RunDocumentChange, SessionRecord, Stores } from '../../core/store.js';

/** Versions per history page. */
export const historyPageSize = 10;

/** "2026-12-03 12:10 UTC". */
export function formatTime(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** "1,234 chars". */
export function formatSize(chars: number): string {
  return `${chars.toLocaleString('en-US')} char${chars === 1 ? '' : 's'}`;
}

/** One line per document: "**MAIN.md** · 1,234 chars · v5 · 2026-12-03 12:10 UTC by Ada (edited by Ada) · 📌 2". */
export function documentLine(entry: DocumentSummary): string {
  const { document, lastChange } = entry;
  const reason = lastChange.reason ? ` (${oneLine(lastChange.reason, 80)})` : '';
  const pins = document.pinnedLines.length > 0 ? ` · 📌 ${document.pinnedLines.length}` : '';
  return `**${document.path}** · ${formatSize(document.content.length)} · v${document.version} · ${formatTime(lastChange.createdAt)} by ${versionAuthor(lastChange.author)}${reason}${pins}`;
}

/** The browser as text: the space's documents, one line each. */
export function browserText(entries: readonly DocumentSummary[]): string {
  if (entries.length === 0) return 'No memory documents in this space yet.';
  return `**Memory of this conversation** (${entries.length} document${entries.length === 1 ? '' : 's'}):\n${entries.map((entry) => `• ${documentLine(entry)}`).join('\n')}`;
}

/** The document's text with its pinned lines marked 📌 (for reading, never for editing). */
export function pinnedView(document: Pick<DocumentRecord, 'content' | 'pinnedLines'>): string {
  if (document.pinnedLines.length === 0) return document.content;
  const pins = new Set(document.pinnedLines);
  return document.content.split('\n').map((line) => (pins.has(pinText(line)) ? `📌 ${line}` : line)).join('\n');
}

/** "v5 · 2026-12-03 12:10 UTC · background memory · reason". */
export function historyLine(version: DocumentVersionRecord): string {
  const what = version.deleted ? ' · deleted' : '';
  // Reverts stored before their reason named the version they undid carry a run's id: no reader's word.
  const readable = version.reason.replace(/ of (?:memory )?run [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '');
  const reason = readable ? ` · ${oneLine(readable, 200)}` : '';
  return `v${version.version} · ${formatTime(version.createdAt)} · ${versionAuthor(version.author)}${what}${reason}`;
}

/** The sessions the versions came from, by id (for links to their threads). */
export async function versionSessions(stores: Pick<Stores, 'sessions'>, versions: readonly DocumentVersionRecord[]): Promise<Map<string, SessionRecord>> {
  const ids = [...new Set(versions.flatMap((version) => (version.sessionId ? [version.sessionId] : [])))];
  const sessions = await Promise.all(ids.map((id) => stores.sessions.get(id)));
  return new Map(sessions.flatMap((session) => (session ? [[session.id, session] as const] : [])));
}

/** A history page as Markdown; `link` gives a version's thread link (null: none known). */
export function historyText(path: string, page: { versions: DocumentVersionRecord[]; total: number; offset: number }, link: (version: DocumentVersionRecord) => string | null): string {
  if (page.total === 0) return `**${path}** has no history yet.`;
  const last = page.offset + page.versions.length;
  const lines = page.versions.map((version) => {
    const url = link(version);
    return `• ${historyLine(version)}${url ? ` · [thread](${url})` : ''}`;
  });
  const more = last < page.total ? `\n(versions ${page.offset + 1}–${last} of ${page.total}, newest first)` : '';
  return `**History of ${path}**\n${lines.join('\n')}${more}`;
}

function oneLine(text: string, limit: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/** Who wrote a version, in a few words (a summarizer run is "background memory"). */
export function versionAuthor(author: DocumentAuthor): string {
  switch (author.kind) {
    case 'summarizer':
      return 'background memory';
    case 'worker':
      return 'the worker';
    case 'person':
      return author.name || author.userId;
    case 'system':
      return 'Hippo';
  }
}

/** "v5 by background memory at 12:10 UTC" for each later version. */
export function laterChangesText(later: readonly DocumentVersionRecord[]): string {
  return later
    .map((version) => `v${version.version} by ${versionAuthor(version.author)} at ${version.createdAt.toISOString().slice(11, 16)} UTC${version.deleted ? ' (deleted it)' : ''}`)
    .join('; ');
}

/** R13: the explanation a person reads before choosing to undo a change with the later ones, in Markdown. */
export function choiceText(change: RunDocumentChange): string {
  return `**${change.path}** was changed again after this memory change (${laterChangesText(change.later)}). Undoing this change would undo ${change.later.length === 1 ? 'that one' : 'those'} too.`;
}
