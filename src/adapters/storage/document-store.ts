// Memory documents (R13): compare-and-set writes, one version row per change with its author, so
// people can review what a summarizer run wrote and revert it.
import { randomUUID } from 'node:crypto';
import { ConflictError, PinnedLineError } from '../../core/errors.js';
import { droppedPins } from '../../core/pinned-lines.js';
import type { DocumentAuthor, DocumentKey, DocumentRecord, DocumentStore, DocumentVersionRecord, RunDocumentChange } from '../../core/store.js';
import type pg from 'pg';
import { Prisma, type MemoryDocument, type MemoryDocumentVersion, type PrismaClient } from '../../../prisma/generated/client.js';
import { statementsOn } from './statements.js';
import { storableText } from '../../core/text-hygiene.js';
import { createDocumentReviewMethods, toDocumentRecord } from './document-review.js';
import { SearchGuard } from './search-guard.js';
import type { TransactionClient } from './prisma-support.js';

/** The state a change leaves the document in. */
interface DocumentState {
  content: string;
  deleted: boolean;
}

/**
 * Creates the Prisma-backed DocumentStore (but a person's reviewed write: reviewed-write.ts); on Postgres what every new segment reads and a new
 * space creates (MAIN.md, TODO.md) goes to `pool`.
 */
export function createDocumentStore(prisma: PrismaClient, pool?: pg.Pool, search = new SearchGuard()): Omit<DocumentStore, 'writeReviewed'> {
  const sql = statementsOn(prisma, pool);
  return {
    ...createDocumentReviewMethods(prisma, lockDocumentById, search),

    /** A deleted document reads as absent (null); its history stays reachable through versions(). */
    async read(key) {
      const row = await prisma.memoryDocument.findUnique({ where: { spaceId_sessionKey_path: documentKey(key) } });
      return row && !row.deleted ? toDocumentRecord(row) : null;
    },

    async readMany(keys) {
      if (keys.length === 0) return [];
      // Every new segment's init messages read MAIN.md and TODO.md here: one statement on pg.
      const rows = await sql.rows<MemoryDocument>(Prisma.sql`
        SELECT ${documentColumns} FROM memory_documents
        WHERE NOT deleted AND (space_id, session_key, path) IN (
          SELECT * FROM unnest(${keys.map((key) => key.spaceId)}::text[], ${keys.map((key) => key.sessionKey)}::text[], ${keys.map((key) => key.path)}::text[]))`);
      return keys.map((key) => {
        const row = rows.find((candidate) => candidate.spaceId === key.spaceId && candidate.sessionKey === key.sessionKey && candidate.path === key.path);
        return row ? toDocumentRecord(row) : null;
      });
    },

    async create(key, content, author) {
      const { spaceId, sessionKey, path } = documentKey(key);
      const { authorKind, authorId, authorName, memoryRunId, sessionId } = authorColumns(author);
      // The document and its first version together; a row already there (even a deleted one or
      // a placeholder a writer holds) makes it a no-op, so the version history never forks.
      const rows = await sql.rows<MemoryDocument>(Prisma.sql`
        WITH created AS (
          INSERT INTO memory_documents (id, space_id, session_key, path, version, content, deleted, updated_at)
          VALUES (${randomUUID()}, ${spaceId}, ${sessionKey}, ${path}, 1, ${storableText(content)}, false, now())
          ON CONFLICT (space_id, session_key, path) DO NOTHING
          RETURNING *),
        first_version AS (
          INSERT INTO memory_document_versions (id, document_id, version, path, content, deleted, author_kind, author_id, author_name, memory_run_id, session_id)
          SELECT ${randomUUID()}, id, 1, path, content, false, ${authorKind}, ${authorId}, ${authorName}, ${memoryRunId}, ${sessionId} FROM created)
        SELECT ${documentColumns} FROM created`);
      const [row] = rows;
      return row ? toDocumentRecord(row) : null;
    },

    async list(spaceId, sessionId) {
      const rows = await prisma.memoryDocument.findMany({
        where: { spaceId, deleted: false, sessionKey: { in: ['', sessionId] } },
        orderBy: [{ path: 'asc' }, { sessionKey: 'asc' }],
      });
      return rows.map(toDocumentRecord);
    },

    write(key, content, author, expectedVersion, reason = '') {
      return prisma.$transaction(async (tx) => {
        const current = await lockDocument(tx, key);
        checkExpectedVersion(key.path, current, expectedVersion);
        return applyChange(tx, current, { content, deleted: false }, author, { reason });
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

    move(from, to, author) {
      return prisma.$transaction(async (tx) => {
        // Locked in key order, so two moves between the same documents cannot deadlock.
        const [first, second] = [from, to].sort((left, right) => left.path.localeCompare(right.path));
        const locked = new Map([[first!.path, await lockDocument(tx, first!)], [second!.path, await lockDocument(tx, second!)]]);
        const source = locked.get(from.path);
        const target = locked.get(to.path);
        if (!source || source.deleted) throw new ConflictError(`${from.path} does not exist (it may have been removed since you read it); list the documents again`);
        if (!target || !target.deleted) throw new ConflictError(`${to.path} already exists; choose another path or delete it first`);
        // The pins move with the text, so the move is no removal of a pinned line.
        const moved = await applyChange(tx, target, { content: source.content, deleted: false }, author, { reason: `moved from ${from.path}`, pinnedLines: source.pinnedLines });
        await applyChange(tx, source, { content: '', deleted: true }, author, { reason: `moved to ${to.path}`, pinnedLines: [] });
        return moved;
      });
    },

    async versions(documentId) {
      const rows = await prisma.memoryDocumentVersion.findMany({ where: { documentId }, orderBy: { version: 'desc' } });
      return rows.map(toVersionRecord);
    },

    async history(documentId, page) {
      const [rows, total] = await Promise.all([
        prisma.memoryDocumentVersion.findMany({ where: { documentId }, orderBy: { version: 'desc' }, skip: page.offset, take: page.limit }),
        prisma.memoryDocumentVersion.count({ where: { documentId } }),
      ]);
      // Versions written before sessions were recorded on them: a run's session is the run's own.
      const runIds = rows.flatMap((row) => (row.sessionId === null && row.memoryRunId ? [row.memoryRunId] : []));
      const runs = runIds.length ? await prisma.memoryRun.findMany({ where: { id: { in: runIds } }, select: { id: true, sessionId: true } }) : [];
      const sessionOfRun = new Map(runs.map((run) => [run.id, run.sessionId]));
      return {
        total,
        versions: rows.map((row) => ({ ...toVersionRecord(row), sessionId: toVersionRecord(row).sessionId ?? sessionOfRun.get(row.memoryRunId ?? '') ?? null })),
      };
    },

    async versionsByRun(memoryRunId) {
      const rows = await prisma.memoryDocumentVersion.findMany({
        where: { memoryRunId },
        orderBy: [{ createdAt: 'desc' }, { version: 'desc' }],
      });
      return rows.map(toVersionRecord);
    },

    revert(documentId, version, author, expectedCurrent) {
      return prisma.$transaction((tx) => revertVersion(tx, documentId, version, author, expectedCurrent));
    },

    async runChanges(memoryRunId) {
      const written = await prisma.memoryDocumentVersion.findMany({ where: { memoryRunId }, select: { documentId: true, version: true, path: true } });
      const byDocument = new Map<string, { path: string; first: number; last: number }>();
      for (const row of written) {
        const seen = byDocument.get(row.documentId);
        if (!seen) byDocument.set(row.documentId, { path: row.path, first: row.version, last: row.version });
        else {
          seen.first = Math.min(seen.first, row.version);
          if (row.version > seen.last) Object.assign(seen, { last: row.version, path: row.path });
        }
      }
      const changes: RunDocumentChange[] = [];
      for (const [documentId, run] of byDocument) {
        const [document, later] = await Promise.all([
          prisma.memoryDocument.findUniqueOrThrow({ where: { id: documentId }, select: { version: true } }),
          // A revert restores the state before the run's first version, so every version by
          // another author after that one is a later change, even one between two of the run's (R13).
          prisma.memoryDocumentVersion.findMany({
            where: { documentId, version: { gt: run.first }, OR: [{ memoryRunId: null }, { memoryRunId: { not: memoryRunId } }] },
            orderBy: { version: 'asc' },
          }),
        ]);
        changes.push({
          documentId, path: run.path, firstVersion: run.first, lastVersion: run.last, currentVersion: document.version,
          later: later.map(toVersionRecord), reverted: later.some((version) => version.revertedRunId === memoryRunId),
        });
      }
      return changes.sort((left, right) => left.path.localeCompare(right.path));
    },

    revertRunDocuments(memoryRunId, targets, author) {
      return prisma.$transaction(async (tx) => {
        const restored: DocumentRecord[] = [];
        // Locked in id order, so two reverts of overlapping documents cannot deadlock.
        for (const target of [...targets].sort((left, right) => left.documentId.localeCompare(right.documentId))) {
          const current = await lockDocumentById(tx, target.documentId);
          if (current.version !== target.expectedVersion) {
            throw new ConflictError(`${current.path} changed again (now version ${String(current.version)}, you saw version ${String(target.expectedVersion)}): look at the change and choose again`);
          }
          const first = await tx.memoryDocumentVersion.findFirst({ where: { documentId: target.documentId, memoryRunId }, orderBy: { version: 'asc' } });
          if (!first) throw new Error(`memory run ${memoryRunId} did not write ${current.path}`);
          const state = await stateBefore(tx, target.documentId, first.version);
          const at = `${first.createdAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
          restored.push(await applyChange(tx, current, state, author, { reason: `undid the memory change that made v${String(first.version)} (${at})`, revertedRunId: memoryRunId }));
        }
        return restored;
      });
    },

    async latestRevertibleRun(spaceId) {
      const rows = await prisma.$queryRaw<Array<{ memory_run_id: string; at: Date }>>`
        SELECT v.memory_run_id, max(v.created_at) AS at
        FROM memory_document_versions v JOIN memory_documents d ON d.id = v.document_id
        WHERE d.space_id = ${spaceId} AND v.memory_run_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM memory_document_versions r WHERE r.document_id = v.document_id AND r.reverted_run_id = v.memory_run_id)
        GROUP BY v.memory_run_id
        ORDER BY at DESC
        LIMIT 1`;
      const row = rows[0];
      return row ? { memoryRunId: row.memory_run_id, at: row.at } : null;
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
async function revertVersion(tx: TransactionClient, documentId: string, version: number, author: DocumentAuthor, expectedCurrent?: number): Promise<DocumentRecord> {
  const current = await lockDocumentById(tx, documentId);
  if (expectedCurrent !== undefined && current.version !== expectedCurrent) {
    throw new ConflictError(`${current.path} changed again (now version ${String(current.version)}, you saw version ${String(expectedCurrent)}): look at the change and choose again`);
  }
  const reverted = await tx.memoryDocumentVersion.findUnique({ where: { documentId_version: { documentId, version } } });
  if (!reverted) throw new Error(`${current.path} has no version ${String(version)}`);
  return applyChange(tx, current, await stateBefore(tx, documentId, version), author, { reason: `undid version ${String(version)}` });
}

/** The document as it was before `version` was written (version 1 created it: absent before). */
async function stateBefore(tx: TransactionClient, documentId: string, version: number): Promise<DocumentState> {
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

function authorColumns(author: DocumentAuthor): { authorKind: string; authorId: string; authorName: string; memoryRunId: string | null; sessionId: string | null } {
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
function documentKey(key: DocumentKey): DocumentKey {
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
