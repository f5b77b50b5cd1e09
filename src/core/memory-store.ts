// The storage ports of memory documents (R13, R15) and of their review by people (docs/product.md
// "Review memory"): versions with authors, pinned lines, review events that the next summarizer
// of a space is given, and the spaces themselves. Re-exported by store.ts.
import type { MemoryScope, Platform } from './places.js';

/** The space's main document, loaded into every context. */
export const mainDocumentPath = 'MAIN.md';
/** The session's own plan (a document of its session key). */
export const todoDocumentPath = 'TODO.md';

/** Who wrote a version: a summarizer run, the worker (its TODO.md), a person, or Hippo itself. */
export type DocumentAuthor =
  /** `sessionId`: the session whose thread the run belongs to (history links). */
  | { kind: 'summarizer'; memoryRunId: string; sessionId?: string }
  | { kind: 'worker'; sessionId: string }
  /** `sessionId`: the session whose thread the person acted from, when they did. */
  | { kind: 'person'; userId: string; name: string; sessionId?: string }
  | { kind: 'system' };

/** A memory document as it is now. */
export interface DocumentRecord {
  id: string;
  spaceId: string;
  /** '' for space documents; the session id for its TODO.md. */
  sessionKey: string;
  path: string;
  version: number;
  content: string;
  deleted: boolean;
  /** Lines people pinned (trimmed text): the summarizer may not remove or rewrite them. */
  pinnedLines: string[];
  updatedAt: Date;
}

/** One version of a document (R13): its text, author and reason; never deleted. */
export interface DocumentVersionRecord {
  documentId: string;
  path: string;
  version: number;
  content: string;
  deleted: boolean;
  author: DocumentAuthor;
  /** One line: why this version exists (the writer's note, "reverted by …"). */
  reason: string;
  /** Set on a version that undid a memory run's change. */
  revertedRunId: string | null;
  reviewedBy: string | null;
  /** The session whose thread the change came from, when known (see DocumentStore.history). */
  sessionId: string | null;
  createdAt: Date;
}

/** Where a document lives: its space, '' or the session (TODO.md), and its path. */
export interface DocumentKey {
  spaceId: string;
  sessionKey: string;
  path: string;
}

/** A space document as the memory browser lists it: size, last change, last author. */
export interface DocumentSummary {
  document: DocumentRecord;
  lastChange: Pick<DocumentVersionRecord, 'version' | 'author' | 'reason' | 'createdAt'>;
}

/** A document that matched a search, with the lines around the match. */
export interface DocumentSearchHit {
  path: string;
  version: number;
  snippet: string;
}

/** A person's edit that lost a compare-and-set race, kept so they can edit again from it. */
export interface EditDraft {
  id: string;
  documentId: string;
  /** The (newer) version the draft is to be applied to. */
  baseVersion: number;
  /** Which part of the document (an adapter's key, as text). */
  part: string;
  pieces: string[];
  authorId: string;
}

/** Memory documents with versions, pins and drafts (R13, R15, review). */
export interface DocumentStore {
  read(key: DocumentKey): Promise<DocumentRecord | null>;
  /** A document by id, deleted or not; null when there is none. */
  get(documentId: string): Promise<DocumentRecord | null>;
  /** Several documents in one read, in the order asked: null for one absent or deleted. */
  readMany(keys: readonly DocumentKey[]): Promise<Array<DocumentRecord | null>>;
  /**
   * Creates a document that never existed, as version 1, in one statement; null when the document
   * has a row (live, deleted, or created meanwhile): then write() with its checks is the way.
   */
  create(key: DocumentKey, content: string, author: DocumentAuthor): Promise<DocumentRecord | null>;
  /** Live documents of the space plus the session's own (TODO.md). */
  list(spaceId: string, sessionId: string): Promise<DocumentRecord[]>;
  /** Live documents of the whole space (no TODO.md), by path, with their last change. */
  spaceDocuments(spaceId: string): Promise<DocumentSummary[]>;
  /**
   * Full-text search of the space's live documents (no TODO.md) for people: best match first, each
   * with a snippet (matches in **bold**). Words match in any language (no stemming). Bounded like
   * ContextStore.searchOriginals, per `searcher`.
   */
  search(spaceId: string, query: string, limit: number, searcher: string): Promise<DocumentSearchHit[]>;
  /**
   * Writes a new version. `expectedVersion`: the version the writer read (compare-and-set);
   * 0 = the document must not exist yet; undefined = no check. Throws ConflictError on a race.
   * `reason`: one line kept with the version ("edited by Ada", the summarizer's note).
   * A summarizer's write that drops a pinned line throws PinnedLineError (nothing written); a
   * person's or the system's drops the pins whose line is gone.
   */
  write(key: DocumentKey, content: string, author: DocumentAuthor, expectedVersion?: number, reason?: string): Promise<DocumentRecord>;
  /**
   * A person's change of a document and its review event, together (one statement): `content` is
   * the next version if the document is still live at `document.version`, and `event` is recorded
   * in the space's review log with it; else ConflictError and nothing is written. As write(), the
   * pins whose line is gone are dropped; `reason` as write's.
   */
  writeReviewed(document: DocumentRecord, content: string, author: Extract<DocumentAuthor, { kind: 'person' }>, reason: string, event: ReviewedChange): Promise<DocumentRecord>;
  /** Marks the document deleted (a new version); throws ConflictError like write, PinnedLineError for a summarizer. */
  remove(key: DocumentKey, author: DocumentAuthor, expectedVersion?: number): Promise<DocumentRecord>;
  /**
   * Renames a document in one transaction: the target is created (ConflictError if it exists) and
   * the source deleted, or neither. Pinned lines move with it.
   */
  move(from: DocumentKey, to: DocumentKey, author: DocumentAuthor): Promise<DocumentRecord>;
  /** Newest first. */
  versions(documentId: string): Promise<DocumentVersionRecord[]>;
  /** One page of versions, newest first, each with the session it came from; and how many there are. */
  history(documentId: string, page: { offset: number; limit: number }): Promise<{ versions: DocumentVersionRecord[]; total: number }>;
  /** The versions a memory run wrote, newest first. */
  versionsByRun(memoryRunId: string): Promise<DocumentVersionRecord[]>;
  /**
   * Restores the version before `version` as a new version written by `author`. With
   * `expectedCurrent`, throws ConflictError unless the document is still at that version.
   */
  revert(documentId: string, version: number, author: DocumentAuthor, expectedCurrent?: number): Promise<DocumentRecord>;
  /** R13: what a memory run changed, per document, with what happened to each since. */
  runChanges(memoryRunId: string): Promise<RunDocumentChange[]>;
  /**
   * R13: restores each target document to its state before the run, as new versions by `author`,
   * in one transaction. Each target names the current version the person was shown: if any
   * document changed since, nothing is written (ConflictError), so no later change is discarded
   * unseen.
   */
  revertRunDocuments(memoryRunId: string, targets: ReadonlyArray<{ documentId: string; expectedVersion: number }>, author: DocumentAuthor): Promise<DocumentRecord[]>;
  /** The newest summarizer run of the space whose changes are not all reverted, or null. */
  latestRevertibleRun(spaceId: string): Promise<{ memoryRunId: string; at: Date } | null>;
  markReviewed(memoryRunId: string, reviewer: string): Promise<number>;
  /**
   * Pins a line of the document's current text (trimmed); ConflictError when the document has no
   * such line (it changed, or was deleted). Pinning twice is a no-op.
   */
  pin(documentId: string, line: string): Promise<DocumentRecord>;
  /** Unpins a line; a line that was not pinned is a no-op. */
  unpin(documentId: string, line: string): Promise<DocumentRecord>;
  /** Keeps a draft (returns its id). */
  saveDraft(draft: Omit<EditDraft, 'id'>): Promise<string>;
  /** The draft, if it exists and belongs to `authorId`. */
  draft(id: string, authorId: string): Promise<EditDraft | null>;
}

/** One document a memory run changed, as a revert of the run sees it (R13). */
export interface RunDocumentChange {
  documentId: string;
  path: string;
  /** The run's first and last versions of the document (the run may write it several times). */
  firstVersion: number;
  lastVersion: number;
  /** The document's version now. */
  currentVersion: number;
  /** Versions written after the run's last one, oldest first: undoing the run would undo them too. */
  later: DocumentVersionRecord[];
  /** A revert of this run already restored this document. */
  reverted: boolean;
}

// ── review (docs/product.md "Review memory") ─────────────────────────────────────────────────────

/** A summarizer run a person asked for from the thread: remember or forget something. */
export interface PersonRequest {
  kind: 'remember' | 'forget';
  userId: string;
  name: string;
  /** The person's words (chat text: untrusted). */
  text: string;
  /** The review event that records the request (the run's own brief leaves it out). */
  eventId?: number;
}

/** What a person did to a memory space. */
export type ReviewEventKind = 'revert' | 'edit' | 'ack' | 'pin' | 'unpin' | 'remember' | 'forget';

/** One review event: who did what to which document, with a short quote. */
export interface ReviewEventRecord {
  id: number;
  spaceId: string;
  kind: ReviewEventKind;
  documentPath: string | null;
  authorId: string;
  authorName: string;
  /** What changed or what the person said, short (chat text: untrusted). */
  text: string;
  /** The session whose thread it happened in, when it did. */
  sessionId: string | null;
  createdAt: Date;
}

/** The review event of a person's change (writeReviewed): its space and path are the document's. */
export type ReviewedChange = Pick<ReviewEventRecord, 'kind' | 'authorId' | 'authorName' | 'text' | 'sessionId'>;

/** Review events of memory spaces; the next summarizer of a space is given the ones no succeeded run saw. */
export interface ReviewStore {
  record(event: Omit<ReviewEventRecord, 'id' | 'createdAt'>): Promise<ReviewEventRecord>;
  /**
   * The events of the space after the newest one a SUCCEEDED summarizer run was given (so a
   * failed run's events reach the next one), oldest first: at most `limit`, the newest, and the
   * number of older ones left out.
   */
  unseen(spaceId: string, limit: number): Promise<{ events: ReviewEventRecord[]; omitted: number }>;
  /** Records on a summarizer run the newest event its instruction carried. */
  markGiven(memoryRunId: string, throughEventId: number): Promise<void>;
  /**
   * True when a summarizer run of the space that succeeded or still runs was given the event (a
   * failed run's events go to the next run anyway).
   */
  wasGiven(spaceId: string, eventId: number): Promise<boolean>;
  /** The space's newest events, newest first (the browser shows them). */
  recent(spaceId: string, limit: number): Promise<ReviewEventRecord[]>;
  /**
   * Records a person's remember / forget said in `sessionId`'s thread as an event of the space,
   * pending until a summarizer run of that session takes it (MemoryRunStore.start with the request).
   */
  request(spaceId: string, sessionId: string, request: Omit<PersonRequest, 'eventId'>): Promise<ReviewEventRecord>;
  /** The session's requests no summarizer run has taken (or whose run was interrupted), oldest first. */
  pendingRequests(sessionId: string): Promise<PersonRequest[]>;
  /**
   * The run `memoryRunId` that took the request was cut short (its process stopped): the request
   * is pending again, unless that run no longer counts as running (the next driver found it
   * interrupted and handed the request back itself; a later run may have taken it since).
   */
  handBack(eventId: number, memoryRunId: string): Promise<void>;
}

/** A memory space and the conversation that owns it. */
export interface MemorySpaceRecord {
  id: string;
  platform: Platform;
  workspaceId: string;
  scope: MemoryScope;
  /**
   * The conversation whose members may see the space: a channel, a private channel or a direct
   * conversation; null when every public channel of the workspace shares it (scope "workspace").
   */
  channelId: string | null;
}

/** The memory spaces and their owning conversations. */
export interface MemorySpaceStore {
  get(spaceId: string): Promise<MemorySpaceRecord | null>;
  /** The spaces of one workspace that have documents, newest first. */
  list(platform: Platform, workspaceId: string): Promise<MemorySpaceRecord[]>;
}
