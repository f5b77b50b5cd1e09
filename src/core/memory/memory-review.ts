// The review rules (docs/product.md "Review memory"): everything people do to memory, behind one
// object that adapters reach as `Agent.review` with ids and a reviewer (who acts), never with the
// stores: edit a document part with compare-and-set, undo a document's latest change, pin and unpin
// lines, 👍 a change, revert a memory run per document (R13), and ask memory to remember or forget.
// Every one of them is a review event of the space, which the next summarizer is given. Shared by
// every chat platform; they only draw the forms and buttons, and check who may act.
import { ConflictError } from '../errors.js';
import { diffLines } from '../line-diff.js';
import { memoryRunChanges } from '../memory-run-changes.js';
import { hasLine, pinText } from '../pinned-lines.js';
import { capText } from '../text-hygiene.js';
import { mainDocumentPath, type DocumentAuthor, type DocumentRecord, type DocumentVersionRecord, type ReviewEventKind, type RunDocumentChange, type SessionRecord, type Stores } from '../store.js';
import { documentParts, findPart, replacePart, type DocumentPart, type PartLimits } from '../document-parts.js';

/** The stores review actions use. */
export type ReviewStores = Pick<Stores, 'documents' | 'reviews'>;

/** A person acting on memory, and the session whose thread they acted from (when they did). */
export interface Reviewer {
  userId: string;
  name: string;
  sessionId?: string;
}

/** A person as the author of a version. */
export type PersonAuthor = Extract<DocumentAuthor, { kind: 'person' }>;

/** The version author of a reviewer. */
export function personAuthor(reviewer: Reviewer): PersonAuthor {
  return { kind: 'person', userId: reviewer.userId, name: reviewer.name, ...(reviewer.sessionId ? { sessionId: reviewer.sessionId } : {}) };
}

/** At most this many changed lines are quoted in a review event. */
const quotedLines = 12;

/** A person's remember / forget is kept whole for the run that carries it out, up to this. */
const maxRequestChars = 4_000;

/** "- removed line\n+ added line", the changed lines of a change (capped, with a count of the rest). */
export function changeQuote(before: string, after: string): string {
  const changed = diffLines(before, after).lines.filter((line) => line.startsWith('+ ') || line.startsWith('- '));
  const shown = changed.slice(0, quotedLines).map((line) => (line.length > 200 ? `${line.slice(0, 200)}…` : line));
  return changed.length > shown.length ? `${shown.join('\n')}\n… ${changed.length - shown.length} more changed lines` : shown.join('\n');
}

/** A document's text as a change quotes it: a deleted one is empty. */
function textOf(document: Pick<DocumentRecord, 'content' | 'deleted'>): string {
  return document.deleted ? '' : document.content;
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

/** The outcome of undoing a document's latest change. */
export type UndoOutcome =
  | { status: 'reverted'; document: DocumentRecord; undone: DocumentVersionRecord }
  | { status: 'changed-again'; document: DocumentRecord }
  | { status: 'nothing' };

/** What `pin <text>` did. */
export type PinOutcome =
  | { status: 'pinned'; path: string; line: string }
  | { status: 'added'; path: string; line: string }
  | { status: 'ambiguous'; matches: Array<{ path: string; line: string }> };

/** What a person's revert of a memory run did, and what it left for them to choose. */
export interface RevertResult {
  /** Documents restored now (nothing was written to them after the run). */
  reverted: string[];
  /** Documents changed again after the run: undoing it would undo those changes too; the person chooses. */
  needsChoice: RunDocumentChange[];
  /** Documents a revert of this run already restored. */
  alreadyReverted: string[];
}

/** The outcome of "undo both": done, or the document changed again (shown anew), or done before. */
export type UndoBothOutcome =
  | { status: 'reverted'; path: string }
  | { status: 'changed-again'; change: RunDocumentChange }
  | { status: 'already-reverted'; path: string }
  | { status: 'gone' };

/** The session a remember / forget is for: its space's log records it, its driver carries it out. */
export type RequestSession = Pick<SessionRecord, 'id' | 'memorySpaceId'>;

/** The review actions; `requested` tells whichever process drives the session that a request waits. */
export class MemoryReview {
  constructor(
    private readonly stores: ReviewStores,
    private readonly requested: (sessionId: string) => Promise<void> = async () => undefined,
  ) {}

  /**
   * Saves an edited part as a new version by the person ("edited by <name>"), compare-and-set on the
   * version they edited, with its review event in the same write: if anyone wrote in between,
   * nothing is written and they get the newer text with their edit to decide on (never a silent
   * overwrite, never a lost edit). `read`: the document as the caller's access check just read it
   * (it is not read again); its version is checked by the write.
   */
  async edit(edit: PartEdit, limits: PartLimits, reviewer: Reviewer, read?: DocumentRecord): Promise<EditOutcome> {
    const { documents } = this.stores;
    const document = read?.id === edit.documentId ? read : await documents.get(edit.documentId);
    if (!document || document.deleted) return { status: 'gone' };
    const base = document.version === edit.baseVersion ? document.content : await this.versionContent(edit.documentId, edit.baseVersion);
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
        const saved = await documents.writeReviewed(document, content, personAuthor(reviewer), `edited by ${reviewer.name}`, {
          kind: 'edit', authorId: reviewer.userId, authorName: reviewer.name, sessionId: reviewer.sessionId ?? null,
          text: changeQuote(document.content, content) || '(no line changed)',
        });
        return { status: 'saved', document: saved };
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
    }
    const current = await documents.get(edit.documentId);
    if (!current || current.deleted) return { status: 'gone' };
    const later = (await documents.versions(edit.documentId)).filter((version) => version.version > edit.baseVersion).reverse();
    const part = edit.partIndex === -1 ? null : findPart(current.content, basePart.key, limits);
    return { status: 'conflict', document: current, later, part, text };
  }

  /**
   * Undoes the document's latest change (the version the person was shown), as a new version by
   * them. A change that landed since they looked is not undone unseen: they are shown it again.
   */
  async undo(documentId: string, shownVersion: number, reviewer: Reviewer): Promise<UndoOutcome> {
    const { documents } = this.stores;
    const document = await documents.get(documentId);
    if (!document || document.version < 1) return { status: 'nothing' };
    if (document.version !== shownVersion) return { status: 'changed-again', document };
    const undone = (await documents.history(documentId, { offset: 0, limit: 1 })).versions[0];
    if (!undone) return { status: 'nothing' };
    try {
      const reverted = await documents.revert(documentId, shownVersion, personAuthor(reviewer), shownVersion);
      await this.recordEvent('revert', reverted, reviewer, changeQuote(textOf(document), textOf(reverted)) || '(no line changed)');
      return { status: 'reverted', document: reverted, undone };
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      const now = await documents.get(documentId);
      return now ? { status: 'changed-again', document: now } : { status: 'nothing' };
    }
  }

  /** Pins a line of a document (a review event); ConflictError when the line is gone. */
  async pin(documentId: string, line: string, reviewer: Reviewer): Promise<DocumentRecord> {
    const pinned = await this.stores.documents.pin(documentId, line);
    await this.recordEvent('pin', pinned, reviewer, pinText(line));
    return pinned;
  }

  /** Unpins a line (a review event). */
  async unpin(documentId: string, line: string, reviewer: Reviewer): Promise<DocumentRecord> {
    const document = await this.stores.documents.unpin(documentId, line);
    await this.recordEvent('unpin', document, reviewer, pinText(line));
    return document;
  }

  /**
   * `pin <text>`: pins the one line of the space's documents that is or contains the text; when no
   * line has it, adds it to MAIN.md (a person's edit) and pins it; when several do, names them.
   */
  async pinByText(spaceId: string, text: string, reviewer: Reviewer): Promise<PinOutcome> {
    const wanted = pinText(text);
    const documents = (await this.stores.documents.spaceDocuments(spaceId)).map((entry) => entry.document);
    const matches = documents.flatMap((document) => document.content.split('\n')
      .filter((line) => pinText(line) !== '' && pinText(line).toLowerCase().includes(wanted.toLowerCase()))
      .map((line) => ({ document, line: pinText(line) })));
    const exact = matches.filter((match) => match.line === wanted || match.line.replace(/^[-*+]\s+/, '') === wanted);
    const chosen = exact.length === 1 ? exact : matches;
    const [only] = chosen;
    if (chosen.length === 1 && only) {
      await this.pin(only.document.id, only.line, reviewer);
      return { status: 'pinned', path: only.document.path, line: only.line };
    }
    if (chosen.length > 1) return { status: 'ambiguous', matches: chosen.slice(0, 10).map((match) => ({ path: match.document.path, line: match.line })) };
    const main = documents.find((document) => document.path === mainDocumentPath);
    const line = `- ${wanted}`;
    const key = { spaceId, sessionKey: '', path: mainDocumentPath };
    const content = main ? `${main.content.replace(/\n*$/, '')}\n${line}\n` : `# Memory\n\n${line}\n`;
    const written = await this.stores.documents.write(key, content, personAuthor(reviewer), main?.version ?? 0, `pinned by ${reviewer.name}`);
    await this.recordEvent('edit', written, reviewer, changeQuote(main?.content ?? '', textOf(written)) || '(no line changed)');
    if (!hasLine(written.content, line)) throw new Error('the added line is missing');
    await this.pin(written.id, line, reviewer);
    return { status: 'added', path: mainDocumentPath, line };
  }

  /** 👍 on a memory change: marked reviewed (by `reviewedBy`, as the platform shows it), and an event per document it changed. */
  async approve(spaceId: string, memoryRunId: string, reviewer: Reviewer, reviewedBy = reviewer.userId): Promise<number> {
    const marked = await this.stores.documents.markReviewed(memoryRunId, reviewedBy);
    for (const change of await memoryRunChanges(this.stores.documents, memoryRunId)) {
      await this.recordEvent('ack', { spaceId, path: change.path }, reviewer, changeQuote(change.before, change.after));
    }
    return marked;
  }

  /**
   * R13: restores the documents a memory run changed that nobody changed since, as one
   * transaction; the others are returned for the person to decide (undo both, or cancel). Each
   * restored document is a review event of its space.
   */
  async revert(memoryRunId: string, reviewer: Reviewer): Promise<RevertResult> {
    const { documents } = this.stores;
    // A change landing between the look and the write is seen on the second look.
    for (let attempt = 1; ; attempt += 1) {
      const changes = await documents.runChanges(memoryRunId);
      const clean = changes.filter((change) => !change.reverted && change.later.length === 0);
      try {
        if (clean.length > 0) {
          const targets = clean.map((change) => ({ documentId: change.documentId, expectedVersion: change.currentVersion }));
          await this.recordReverts(await documents.revertRunDocuments(memoryRunId, targets, personAuthor(reviewer)), reviewer);
        }
      } catch (error) {
        if (error instanceof ConflictError && attempt < 3) continue;
        throw error;
      }
      return {
        reverted: clean.map((change) => change.path),
        needsChoice: changes.filter((change) => !change.reverted && change.later.length > 0),
        alreadyReverted: changes.filter((change) => change.reverted).map((change) => change.path),
      };
    }
  }

  /**
   * R13, "undo both": the person saw the later changes of one document (up to `expectedVersion`)
   * and chose to undo them together with the run's change. A change written since they looked is
   * not discarded: it is returned to be shown.
   */
  async revertWithLaterChanges(memoryRunId: string, documentId: string, expectedVersion: number, reviewer: Reviewer): Promise<UndoBothOutcome> {
    const { documents } = this.stores;
    const change = (await documents.runChanges(memoryRunId)).find((candidate) => candidate.documentId === documentId);
    if (!change) return { status: 'gone' };
    if (change.reverted) return { status: 'already-reverted', path: change.path };
    if (change.currentVersion !== expectedVersion) return { status: 'changed-again', change };
    try {
      await this.recordReverts(await documents.revertRunDocuments(memoryRunId, [{ documentId, expectedVersion }], personAuthor(reviewer)), reviewer);
      return { status: 'reverted', path: change.path };
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      const fresh = (await documents.runChanges(memoryRunId)).find((candidate) => candidate.documentId === documentId);
      return fresh ? { status: 'changed-again', change: fresh } : { status: 'gone' };
    }
  }

  /**
   * A person asked memory to remember something (docs/product.md "Commands"): stored as a review
   * event of the space, pending for the session (so a later summarizer of the space sees it even if
   * this run never happens), and whichever process drives the session is told: it forks a
   * summarizer run told that the person asked from the session's context, once, also after a
   * restart. Its note in the thread says who asked. The words are chat text: quoted, untrusted.
   */
  remember(session: RequestSession, reviewer: Reviewer, text: string): Promise<void> {
    return this.request('remember', session, reviewer, text);
  }

  /** A person asked memory to forget something: as remember. */
  forget(session: RequestSession, reviewer: Reviewer, text: string): Promise<void> {
    return this.request('forget', session, reviewer, text);
  }

  private async request(kind: 'remember' | 'forget', session: RequestSession, reviewer: Reviewer, text: string): Promise<void> {
    await this.stores.reviews.request(session.memorySpaceId, session.id, { kind, userId: reviewer.userId, name: reviewer.name, text: capText(text, maxRequestChars) });
    await this.requested(session.id);
  }

  /** The content of one version of a document, or null. */
  private async versionContent(documentId: string, version: number): Promise<string | null> {
    const found = (await this.stores.documents.versions(documentId)).find((candidate) => candidate.version === version);
    return found && !found.deleted ? found.content : null;
  }

  /** Each document a run's revert restored is a review event: what the revert took out or put back. */
  private async recordReverts(restored: readonly DocumentRecord[], reviewer: Reviewer): Promise<void> {
    for (const document of restored) {
      const { versions } = await this.stores.documents.history(document.id, { offset: 0, limit: 2 });
      const [latest, previous] = versions;
      const quote = changeQuote(previous ? textOf(previous) : '', latest ? textOf(latest) : '');
      await this.recordEvent('revert', document, reviewer, quote || '(no line changed)');
    }
  }

  /** Records a review event of the document's space. */
  private async recordEvent(kind: ReviewEventKind, document: Pick<DocumentRecord, 'spaceId' | 'path'>, reviewer: Reviewer, text: string): Promise<void> {
    await this.stores.reviews.record({ spaceId: document.spaceId, kind, documentPath: document.path, authorId: reviewer.userId, authorName: reviewer.name, text, sessionId: reviewer.sessionId ?? null });
  }
}
