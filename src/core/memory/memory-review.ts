// The review rules (docs/product.md "Review memory"), in core beside remember and forget, so every
// change people make reaches the review log through core: besides reverting a run (memory-actions.ts), edit a
// document part with compare-and-set, undo a document's latest change, pin and unpin lines, 👍 a
// change. Every one of them is a review event of the space, which the next summarizer is given.
// Shared by Slack and Discord; they only draw the modals and buttons.
import { ConflictError } from '../errors.js';
import { diffLines } from '../line-diff.js';
import { memoryRunChanges } from '../memory-run-changes.js';
import { mainDocumentPath } from '../memory-store.js';
import { hasLine, pinText } from '../pinned-lines.js';
import type { DocumentAuthor, DocumentRecord, DocumentVersionRecord, ReviewEventKind, Stores } from '../store.js';
import { documentParts, findPart, replacePart, type DocumentPart, type PartLimits } from '../document-parts.js';

/** The stores review actions use. */
export type ReviewStores = Pick<Stores, 'documents' | 'reviews'>;

/** A person acting on memory, and the session whose thread they acted from (when they did). */
export interface Reviewer {
  userId: string;
  name: string;
  sessionId?: string;
}

/** The version author of a reviewer. */
export function personAuthor(reviewer: Reviewer): Extract<DocumentAuthor, { kind: 'person' }> {
  return { kind: 'person', userId: reviewer.userId, name: reviewer.name, ...(reviewer.sessionId ? { sessionId: reviewer.sessionId } : {}) };
}

/** At most this many changed lines are quoted in a review event. */
const quotedLines = 12;

/** "- removed line\n+ added line", the changed lines of a change (capped, with a count of the rest). */
export function changeQuote(before: string, after: string): string {
  const changed = diffLines(before, after).lines.filter((line) => line.startsWith('+ ') || line.startsWith('- '));
  const shown = changed.slice(0, quotedLines).map((line) => (line.length > 200 ? `${line.slice(0, 200)}…` : line));
  return changed.length > shown.length ? `${shown.join('\n')}\n… ${changed.length - shown.length} more changed lines` : shown.join('\n');
}

/** Records a review event of the document's space. */
export async function recordEvent(stores: ReviewStores, kind: ReviewEventKind, document: Pick<DocumentRecord, 'spaceId' | 'path'>, reviewer: Reviewer, text: string): Promise<void> {
  await stores.reviews.record({ spaceId: document.spaceId, kind, documentPath: document.path, authorId: reviewer.userId, authorName: reviewer.name, text, sessionId: reviewer.sessionId ?? null });
}

/** Records what the document's newest version changed (a person's edit or revert). */
export async function recordChange(stores: ReviewStores, kind: 'edit' | 'revert', document: DocumentRecord, reviewer: Reviewer): Promise<void> {
  const { versions } = await stores.documents.history(document.id, { offset: 0, limit: 2 });
  const [latest, previous] = versions;
  const before = previous && !previous.deleted ? previous.content : '';
  const after = latest && !latest.deleted ? latest.content : '';
  await recordEvent(stores, kind, document, reviewer, changeQuote(before, after) || '(no line changed)');
}

/** 👍 on a memory change: marked reviewed (by `reviewedBy`, as the platform shows it), and an event per document it changed. */
export async function ackMemoryRun(stores: ReviewStores, spaceId: string, memoryRunId: string, reviewer: Reviewer, reviewedBy = reviewer.userId): Promise<number> {
  const marked = await stores.documents.markReviewed(memoryRunId, reviewedBy);
  for (const change of await memoryRunChanges(stores.documents, memoryRunId)) {
    await recordEvent(stores, 'ack', { spaceId, path: change.path }, reviewer, changeQuote(change.before, change.after));
  }
  return marked;
}

/** The outcome of saving an edited part. */
export type EditOutcome =
  | { status: 'saved'; document: DocumentRecord }
  | { status: 'unchanged' }
  | { status: 'gone' }
  /**
   * Someone wrote in between: `later` are the versions after the one the person edited, `part` is
   * the same part in the newer text (null when it is gone), `text` their edit, kept.
   */
  | { status: 'conflict'; document: DocumentRecord; later: DocumentVersionRecord[]; part: DocumentPart | null; text: string };

/** An edit of one part of one version of a document. */
export interface PartEdit {
  documentId: string;
  /** The version the person edited. */
  baseVersion: number;
  /** The part's index among that version's parts; -1: the part is gone, the text is added at the end. */
  partIndex: number;
  /** The person's text of the part (the modal's inputs joined as they were cut, see joinPieces). */
  text: string;
}

/**
 * Saves an edited part as a new version by the person ("edited by <name>"), compare-and-set on the
 * version they edited: if anyone wrote in between, nothing is written and they get the newer text
 * with their edit to decide on (never a silent overwrite, never a lost edit).
 */
export async function saveDocumentEdit(stores: ReviewStores, edit: PartEdit, limits: PartLimits, reviewer: Reviewer): Promise<EditOutcome> {
  const document = await stores.documents.get(edit.documentId);
  if (!document || document.deleted) return { status: 'gone' };
  const base = document.version === edit.baseVersion ? document.content : await versionContent(stores, edit.documentId, edit.baseVersion);
  if (base === null) return { status: 'gone' };
  // -1: the person chose to keep their text although its part is gone: it goes at the end.
  const lines = base.split('\n');
  const basePart = edit.partIndex === -1
    ? { index: -1, key: { heading: '', occurrence: -1, chunk: 0 }, title: 'the end of the document', startLine: lines.length, endLine: lines.length, text: '' }
    : documentParts(base, limits)[edit.partIndex];
  if (!basePart) return { status: 'gone' };
  const { text } = edit;
  if (document.version === edit.baseVersion) {
    const content = edit.partIndex === -1 ? `${document.content.replace(/\n*$/, '')}\n\n${text.replace(/\n*$/, '')}\n` : replacePart(document.content, basePart, text);
    if (content === document.content) return { status: 'unchanged' };
    try {
      const saved = await stores.documents.write(document, content, personAuthor(reviewer), edit.baseVersion, `edited by ${reviewer.name}`);
      await recordChange(stores, 'edit', saved, reviewer);
      return { status: 'saved', document: saved };
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
    }
  }
  const current = await stores.documents.get(edit.documentId);
  if (!current || current.deleted) return { status: 'gone' };
  const later = (await stores.documents.versions(edit.documentId)).filter((version) => version.version > edit.baseVersion).reverse();
  const part = edit.partIndex === -1 ? null : findPart(current.content, basePart.key, limits);
  return { status: 'conflict', document: current, later, part, text };
}

/** The content of one version of a document, or null. */
async function versionContent(stores: ReviewStores, documentId: string, version: number): Promise<string | null> {
  const found = (await stores.documents.versions(documentId)).find((candidate) => candidate.version === version);
  return found && !found.deleted ? found.content : null;
}

/** The outcome of undoing a document's latest change. */
export type UndoOutcome =
  | { status: 'reverted'; document: DocumentRecord; undone: DocumentVersionRecord }
  | { status: 'changed-again'; document: DocumentRecord }
  | { status: 'nothing' };

/**
 * Undoes the document's latest change (the version the person was shown), as a new version by
 * them. A change that landed since they looked is not undone unseen: they are shown it again.
 */
export async function undoLatestChange(stores: ReviewStores, documentId: string, shownVersion: number, reviewer: Reviewer): Promise<UndoOutcome> {
  const document = await stores.documents.get(documentId);
  if (!document || document.version < 1) return { status: 'nothing' };
  if (document.version !== shownVersion) return { status: 'changed-again', document };
  const undone = (await stores.documents.history(documentId, { offset: 0, limit: 1 })).versions[0];
  if (!undone) return { status: 'nothing' };
  try {
    const reverted = await stores.documents.revert(documentId, shownVersion, personAuthor(reviewer), shownVersion);
    await recordChange(stores, 'revert', reverted, reviewer);
    return { status: 'reverted', document: reverted, undone };
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const now = await stores.documents.get(documentId);
    return now ? { status: 'changed-again', document: now } : { status: 'nothing' };
  }
}

/** Pins a line of a document (a review event); ConflictError when the line is gone. */
export async function pinLine(stores: ReviewStores, documentId: string, line: string, reviewer: Reviewer): Promise<DocumentRecord> {
  const pinned = await stores.documents.pin(documentId, line);
  await recordEvent(stores, 'pin', pinned, reviewer, pinText(line));
  return pinned;
}

/** Unpins a line (a review event). */
export async function unpinLine(stores: ReviewStores, documentId: string, line: string, reviewer: Reviewer): Promise<DocumentRecord> {
  const document = await stores.documents.unpin(documentId, line);
  await recordEvent(stores, 'unpin', document, reviewer, pinText(line));
  return document;
}

/** What `pin <text>` did. */
export type PinOutcome =
  | { status: 'pinned'; path: string; line: string }
  | { status: 'added'; path: string; line: string }
  | { status: 'ambiguous'; matches: Array<{ path: string; line: string }> };

/**
 * `pin <text>`: pins the one line of the space's documents that is or contains the text; when no
 * line has it, adds it to MAIN.md (a person's edit) and pins it; when several do, names them.
 */
export async function pinByText(stores: ReviewStores, spaceId: string, text: string, reviewer: Reviewer): Promise<PinOutcome> {
  const wanted = pinText(text);
  const documents = (await stores.documents.spaceDocuments(spaceId)).map((entry) => entry.document);
  const matches = documents.flatMap((document) => document.content.split('\n')
    .filter((line) => pinText(line) !== '' && pinText(line).toLowerCase().includes(wanted.toLowerCase()))
    .map((line) => ({ document, line: pinText(line) })));
  const exact = matches.filter((match) => match.line === wanted || match.line.replace(/^[-*+]\s+/, '') === wanted);
  const chosen = exact.length === 1 ? exact : matches;
  const [only] = chosen;
  if (chosen.length === 1 && only) {
    await pinLine(stores, only.document.id, only.line, reviewer);
    return { status: 'pinned', path: only.document.path, line: only.line };
  }
  if (chosen.length > 1) return { status: 'ambiguous', matches: chosen.slice(0, 10).map((match) => ({ path: match.document.path, line: match.line })) };
  const main = documents.find((document) => document.path === mainDocumentPath);
  const line = `- ${wanted}`;
  const key = { spaceId, sessionKey: '', path: mainDocumentPath };
  const content = main ? `${main.content.replace(/\n*$/, '')}\n${line}\n` : `# Memory\n\n${line}\n`;
  const written = await stores.documents.write(key, content, personAuthor(reviewer), main?.version ?? 0, `pinned by ${reviewer.name}`);
  await recordChange(stores, 'edit', written, reviewer);
  if (!hasLine(written.content, line)) throw new Error('the added line is missing');
  await pinLine(stores, written.id, line, reviewer);
  return { status: 'added', path: mainDocumentPath, line };
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
