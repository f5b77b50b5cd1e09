// Changes to memory documents (R13): create, compare-and-set write, remove, move, and the reverts
// of a version or of a memory run's changes, each in one transaction through applyChange.
import { randomUUID } from 'node:crypto';
import { ConflictError } from '../../core/errors.js';
import type { DocumentAuthor, DocumentRecord, DocumentStore } from '../../core/store.js';
import { Prisma, type MemoryDocument, type PrismaClient } from '../../../prisma/generated/client.js';
import type { Statements } from './statements.js';
import { storableText } from '../../core/text-hygiene.js';
import { toDocumentRecord } from './document-review.js';
import { applyChange, authorColumns, checkExpectedVersion, documentColumns, documentKey, lockDocument, lockDocumentById, stateBefore } from './document-changes.js';
import type { TransactionClient } from './prisma-support.js';

type WriteMethods = Pick<DocumentStore, 'create' | 'write' | 'remove' | 'move' | 'revert' | 'revertRunDocuments'>;

/** The write methods; `sql` carries what a new space creates (MAIN.md, TODO.md: pg's pool on Postgres). */
export function createDocumentWrites(prisma: PrismaClient, sql: Statements): WriteMethods {
  return {
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

    revert(documentId, version, author, expectedCurrent) {
      return prisma.$transaction((tx) => revertVersion(tx, documentId, version, author, expectedCurrent));
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
