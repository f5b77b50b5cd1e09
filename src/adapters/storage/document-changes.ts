// The rows of memory documents and their versions, and the one way a change is written (R13): the
// row locked, the expected version checked, the next version stored with its author, pins kept.
// Every write of document-writes.ts (and the review methods' locks) goes through here.
import { randomUUID } from 'node:crypto';
import { ConflictError, PinnedLineError } from '../../core/errors.js';
import { droppedPins } from '../../core/pinned-lines.js';
import type { DocumentAuthor, DocumentKey, DocumentRecord, DocumentVersionRecord } from '../../core/store.js';
import { Prisma, type MemoryDocument, type MemoryDocumentVersion } from '../../../prisma/generated/client.js';
import { storableText } from '../../core/text-hygiene.js';
import { toDocumentRecord } from './document-review.js';
import type { TransactionClient } from './prisma-support.js';

/** The state a change leaves the document in. */
export interface DocumentState {
  content: string;
  deleted: boolean;
}

/** The document as it was before `version` was written (version 1 created it: absent before). */
export async function stateBefore(tx: TransactionClient, documentId: string, version: number): Promise<DocumentState> {
  if (version === 1) return { content: '', deleted: true };
  const previous = await tx.memoryDocumentVersion.findUnique({ where: { documentId_version: { documentId, version: version - 1 } } });
  if (!previous) throw new Error(`memory document ${documentId} has no version ${String(version - 1)}`);
  return { content: previous.content, deleted: previous.deleted };
}

/** The document row locked FOR UPDATE (it must exist). */
export async function lockDocumentById(tx: TransactionClient, documentId: string): Promise<MemoryDocument> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`SELECT id FROM memory_documents WHERE id = ${documentId} FOR UPDATE`;
  if (locked.length === 0) throw new Error(`memory document ${documentId} does not exist`);
  return tx.memoryDocument.findUniqueOrThrow({ where: { id: documentId } });
}

/**
 * Returns the document row locked FOR UPDATE, creating a placeholder (version 0, deleted) when
 * there is none. The placeholder gives a first write a row to lock, so two creators serialise
 * instead of one failing on the unique key; if the transaction rolls back, it goes with it.
 */
export async function lockDocument(tx: TransactionClient, key: DocumentKey): Promise<MemoryDocument> {
  const { spaceId, sessionKey, path } = documentKey(key);
  await tx.$executeRaw`
    INSERT INTO memory_documents (id, space_id, session_key, path, version, content, deleted, updated_at)
    VALUES (${randomUUID()}, ${spaceId}, ${sessionKey}, ${path}, 0, '', true, now())
    ON CONFLICT (space_id, session_key, path) DO NOTHING`;
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM memory_documents WHERE space_id = ${spaceId} AND session_key = ${sessionKey} AND path = ${path} FOR UPDATE`;
  const id = locked[0]?.id;
  if (!id) throw new Error(`memory document ${path} vanished while being locked`);
  return tx.memoryDocument.findUniqueOrThrow({ where: { id } });
}

/** Compare-and-set: undefined = no check; 0 = must not exist (deleted counts as absent); n = must be at n. */
export function checkExpectedVersion(path: string, current: MemoryDocument, expected: number | undefined): void {
  if (expected === undefined) return;
  if (expected === 0) {
    if (current.deleted) return;
    throw new ConflictError(
      `${path} was created since you read it (it is now version ${String(current.version)}); read it and reapply your edit`,
    );
  }
  if (current.version === expected) return;
  const now = current.version === 0 ? 'it does not exist' : `it is now version ${String(current.version)}${current.deleted ? ', deleted' : ''}`;
  throw new ConflictError(
    `${path} changed since you read it (you read version ${String(expected)}, ${now}); read it again and reapply your edit`,
  );
}

/** What a change writes besides the state: its reason, the run it undid, pins set explicitly (a move). */
export interface ChangeNote {
  reason?: string;
  revertedRunId?: string;
  pinnedLines?: string[];
}

/**
 * Writes the next version. Pinned lines the new state no longer has: a summarizer may not drop
 * them (PinnedLineError, nothing written); anyone else's change unpins them with the line.
 */
export async function applyChange(
  tx: TransactionClient,
  current: MemoryDocument,
  state: DocumentState,
  author: DocumentAuthor,
  note: ChangeNote = {},
): Promise<DocumentRecord> {
  const version = current.version + 1;
  // A model may write NUL (echoing a page): Postgres text cannot hold it.
  state = { ...state, content: storableText(state.content) };
  const pins = current.pinnedLines ?? [];
  const dropped = note.pinnedLines ? [] : droppedPins(pins, state.content, state.deleted);
  const [firstDropped] = dropped;
  if (author.kind === 'summarizer' && firstDropped !== undefined) throw new PinnedLineError(current.path, firstDropped);
  const pinnedLines = note.pinnedLines ?? pins.filter((pin) => !dropped.includes(pin));
  const updated = await tx.memoryDocument.update({ where: { id: current.id }, data: { ...state, version, pinnedLines } });
  await tx.memoryDocumentVersion.create({
    data: {
      documentId: current.id, version, path: current.path, ...state, ...authorColumns(author),
      reason: storableText((note.reason ?? '').replace(/\s+/g, ' ').slice(0, 300)), revertedRunId: note.revertedRunId ?? null,
    },
  });
  return toDocumentRecord(updated);
}

export function authorColumns(author: DocumentAuthor): { authorKind: string; authorId: string; authorName: string; memoryRunId: string | null; sessionId: string | null } {
  switch (author.kind) {
    case 'summarizer':
      return { authorKind: author.kind, authorId: author.memoryRunId, authorName: '', memoryRunId: author.memoryRunId, sessionId: author.sessionId ?? null };
    case 'worker':
      return { authorKind: author.kind, authorId: author.sessionId, authorName: '', memoryRunId: null, sessionId: author.sessionId };
    case 'person':
      return { authorKind: author.kind, authorId: author.userId, authorName: author.name, memoryRunId: null, sessionId: author.sessionId ?? null };
    case 'system':
      return { authorKind: author.kind, authorId: '', authorName: '', memoryRunId: null, sessionId: null };
  }
}

function toAuthor(row: MemoryDocumentVersion): DocumentAuthor {
  const session = row.sessionId === null ? {} : { sessionId: row.sessionId };
  switch (row.authorKind) {
    case 'summarizer':
      return { kind: 'summarizer', memoryRunId: row.memoryRunId ?? row.authorId, ...session };
    case 'worker':
      return { kind: 'worker', sessionId: row.authorId };
    case 'person':
      return { kind: 'person', userId: row.authorId, name: row.authorName, ...session };
    case 'system':
      return { kind: 'system' };
    default:
      throw new Error(`document version ${row.id} has an unknown author kind "${row.authorKind}"`);
  }
}

/** A memory_documents row as Prisma names its fields. */
export const documentColumns = Prisma.raw(
  'id, space_id AS "spaceId", session_key AS "sessionKey", path, version, content, deleted, ' +
    'pinned_lines AS "pinnedLines", created_at AS "createdAt", updated_at AS "updatedAt"',
);

// Callers may pass a whole DocumentRecord; Prisma refuses unknown fields, so copy the three.
export function documentKey(key: DocumentKey): DocumentKey {
  return { spaceId: key.spaceId, sessionKey: key.sessionKey, path: key.path };
}

/** A version row as core sees it. */
export function toVersionRecord(row: MemoryDocumentVersion): DocumentVersionRecord {
  return {
    documentId: row.documentId,
    path: row.path,
    version: row.version,
    content: row.content,
    deleted: row.deleted,
    author: toAuthor(row),
    reason: row.reason,
    revertedRunId: row.revertedRunId,
    reviewedBy: row.reviewedBy,
    sessionId: row.sessionId ?? (row.authorKind === 'worker' ? row.authorId : null),
    createdAt: row.createdAt,
  };
}
