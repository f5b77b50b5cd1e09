// Memory documents (R13): compare-and-set writes, one version row per change with its author, so
// people can review what a summarizer run wrote and revert it.
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../../core/errors.js';
import type { DocumentAuthor, DocumentKey, DocumentRecord, DocumentStore, DocumentVersionRecord, RevertOutcome } from '../../core/store.js';
import type { MemoryDocument, MemoryDocumentVersion, PrismaClient } from './generated/client.js';
import type { TransactionClient } from './prisma-support.js';

/** The state a change leaves the document in. */
interface DocumentState {
  content: string;
  deleted: boolean;
}

/** Creates the Prisma-backed DocumentStore. */
export function createDocumentStore(prisma: PrismaClient): DocumentStore {
  return {
    /** A deleted document reads as absent (null); its history stays reachable through versions(). */
    async read(key) {
      const row = await prisma.memoryDocument.findUnique({ where: { spaceId_sessionKey_path: documentKey(key) } });
      return row && !row.deleted ? toDocumentRecord(row) : null;
    },

    async list(spaceId, sessionId) {
      const rows = await prisma.memoryDocument.findMany({
        where: { spaceId, deleted: false, sessionKey: { in: ['', sessionId] } },
        orderBy: [{ path: 'asc' }, { sessionKey: 'asc' }],
      });
      return rows.map(toDocumentRecord);
    },

    write(key, content, author, expectedVersion) {
      return prisma.$transaction(async (tx) => {
        const current = await lockDocument(tx, key);
        checkExpectedVersion(key.path, current, expectedVersion);
        return applyChange(tx, current, { content, deleted: false }, author);
      });
    },

    remove(key, author, expectedVersion) {
      return prisma.$transaction(async (tx) => {
        const current = await lockDocument(tx, key);
        checkExpectedVersion(key.path, current, expectedVersion);
        if (current.deleted) {
          throw new ConflictError(`${key.path} does not exist (it may have been removed since you read it); list the documents again`);
        }
        return applyChange(tx, current, { content: '', deleted: true }, author);
      });
    },

    /** Newest first. */
    async versions(documentId) {
      const rows = await prisma.memoryDocumentVersion.findMany({ where: { documentId }, orderBy: { version: 'desc' } });
      return rows.map(toVersionRecord);
    },

    async versionsByRun(memoryRunId) {
      const rows = await prisma.memoryDocumentVersion.findMany({
        where: { memoryRunId },
        orderBy: [{ createdAt: 'desc' }, { version: 'desc' }],
      });
      return rows.map(toVersionRecord);
    },

    revert(documentId, version, author) {
      return prisma.$transaction((tx) => revertVersion(tx, documentId, version, author));
    },

    revertRun(memoryRunId, author) {
      return prisma.$transaction(async (tx): Promise<RevertOutcome> => {
        const written = await tx.memoryDocumentVersion.findMany({ where: { memoryRunId } });
        if (written.length === 0) return { status: 'nothing-to-revert', paths: [] };
        // The once-mark commits with the restored versions or not at all: a revert that fails
        // half-way leaves nothing behind and can be tried again. A concurrent second revert waits
        // on the key, then finds it taken.
        const marked = await tx.$executeRaw`INSERT INTO processed_events (key) VALUES (${`revert:${memoryRunId}`}) ON CONFLICT DO NOTHING`;
        if (marked === 0) return { status: 'already-reverted', paths: [] };
        // The run's first version of each document: reverting it restores the state before the run.
        const first = new Map<string, (typeof written)[number]>();
        for (const version of written) {
          const seen = first.get(version.documentId);
          if (!seen || version.version < seen.version) first.set(version.documentId, version);
        }
        const paths: string[] = [];
        for (const version of [...first.values()].sort((left, right) => left.path.localeCompare(right.path))) {
          await revertVersion(tx, version.documentId, version.version, author);
          paths.push(version.path);
        }
        return { status: 'reverted', paths };
      });
    },

    async markReviewed(memoryRunId, reviewer) {
      const { count } = await prisma.memoryDocumentVersion.updateMany({
        where: { memoryRunId },
        data: { reviewedBy: reviewer, reviewedAt: new Date() },
      });
      return count;
    },
  };
}

/** Restores the version before `version` of a document as a new version by `author`. */
async function revertVersion(tx: TransactionClient, documentId: string, version: number, author: DocumentAuthor): Promise<DocumentRecord> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`SELECT id FROM memory_documents WHERE id = ${documentId} FOR UPDATE`;
  if (locked.length === 0) throw new Error(`memory document ${documentId} does not exist`);
  const current = await tx.memoryDocument.findUniqueOrThrow({ where: { id: documentId } });
  const reverted = await tx.memoryDocumentVersion.findUnique({ where: { documentId_version: { documentId, version } } });
  if (!reverted) throw new Error(`${current.path} has no version ${String(version)}`);
  // Version 1 created the document, so undoing it means the document does not exist.
  const previous = version === 1 ? null : await tx.memoryDocumentVersion.findUnique({
    where: { documentId_version: { documentId, version: version - 1 } },
  });
  if (version !== 1 && !previous) throw new Error(`${current.path} has no version ${String(version - 1)}`);
  const state = previous ? { content: previous.content, deleted: previous.deleted } : { content: '', deleted: true };
  return applyChange(tx, current, state, author);
}

/**
 * Returns the document row locked FOR UPDATE, creating a placeholder (version 0, deleted) when
 * there is none. The placeholder gives a first write a row to lock, so two creators serialise
 * instead of one failing on the unique key; if the transaction rolls back, it goes with it.
 */
async function lockDocument(tx: TransactionClient, key: DocumentKey): Promise<MemoryDocument> {
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
function checkExpectedVersion(path: string, current: MemoryDocument, expected: number | undefined): void {
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

async function applyChange(
  tx: TransactionClient,
  current: MemoryDocument,
  state: DocumentState,
  author: DocumentAuthor,
): Promise<DocumentRecord> {
  const version = current.version + 1;
  const updated = await tx.memoryDocument.update({ where: { id: current.id }, data: { ...state, version } });
  await tx.memoryDocumentVersion.create({
    data: { documentId: current.id, version, path: current.path, ...state, ...authorColumns(author) },
  });
  return toDocumentRecord(updated);
}

function authorColumns(author: DocumentAuthor): { authorKind: string; authorId: string; authorName: string; memoryRunId: string | null } {
  switch (author.kind) {
    case 'summarizer':
      return { authorKind: author.kind, authorId: author.memoryRunId, authorName: '', memoryRunId: author.memoryRunId };
    case 'worker':
      return { authorKind: author.kind, authorId: author.sessionId, authorName: '', memoryRunId: null };
    case 'person':
      return { authorKind: author.kind, authorId: author.userId, authorName: author.name, memoryRunId: null };
    case 'system':
      return { authorKind: author.kind, authorId: '', authorName: '', memoryRunId: null };
  }
}

function toAuthor(row: MemoryDocumentVersion): DocumentAuthor {
  switch (row.authorKind) {
    case 'summarizer':
      return { kind: 'summarizer', memoryRunId: row.memoryRunId ?? row.authorId };
    case 'worker':
      return { kind: 'worker', sessionId: row.authorId };
    case 'person':
      return { kind: 'person', userId: row.authorId, name: row.authorName };
    case 'system':
      return { kind: 'system' };
    default:
      throw new Error(`document version ${row.id} has an unknown author kind "${row.authorKind}"`);
  }
}

// Callers may pass a whole DocumentRecord; Prisma refuses unknown fields, so copy the three.
function documentKey(key: DocumentKey): DocumentKey {
  return { spaceId: key.spaceId, sessionKey: key.sessionKey, path: key.path };
}

function toDocumentRecord(row: MemoryDocument): DocumentRecord {
  return {
    id: row.id,
    spaceId: row.spaceId,
    sessionKey: row.sessionKey,
    path: row.path,
    version: row.version,
    content: row.content,
    deleted: row.deleted,
    updatedAt: row.updatedAt,
  };
}

function toVersionRecord(row: MemoryDocumentVersion): DocumentVersionRecord {
  return {
    documentId: row.documentId,
    path: row.path,
    version: row.version,
    content: row.content,
    deleted: row.deleted,
    author: toAuthor(row),
    reviewedBy: row.reviewedBy,
    createdAt: row.createdAt,
  };
}
