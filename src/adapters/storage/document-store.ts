// Memory documents (R13): compare-and-set writes, one version row per change with its author, so
// people can review what a summarizer run wrote and revert it. The store is composed of one
// factory per concern: reads (here), writes (document-writes.ts), history (document-history.ts)
// and review (document-review.ts), over the rows and the change of document-changes.ts.
import type { DocumentStore } from '../../core/store.js';
import type pg from 'pg';
import { Prisma, type MemoryDocument, type PrismaClient } from '../../../prisma/generated/client.js';
import { statementsOn, type Statements } from './statements.js';
import { createDocumentReviewMethods, toDocumentRecord } from './document-review.js';
import { documentColumns, documentKey, lockDocumentById } from './document-changes.js';
import { createDocumentHistory } from './document-history.js';
import { createDocumentWrites } from './document-writes.js';
import { SearchGuard } from './search-guard.js';

export { applyChange, documentColumns, lockDocumentById, toVersionRecord, type ChangeNote } from './document-changes.js';

/**
 * Creates the Prisma-backed DocumentStore (but a person's reviewed write: reviewed-write.ts); on
 * Postgres what every new segment reads and a new space creates (MAIN.md, TODO.md) goes to `pool`.
 */
export function createDocumentStore(prisma: PrismaClient, pool?: pg.Pool, search = new SearchGuard()): Omit<DocumentStore, 'writeReviewed'> {
  const sql = statementsOn(prisma, pool);
  return {
    ...createDocumentReviewMethods(prisma, lockDocumentById, search),
    ...createDocumentReads(prisma, sql),
    ...createDocumentWrites(prisma, sql),
    ...createDocumentHistory(prisma),
  };
}

/** The read methods; `sql` carries what every new segment reads (pg's pool on Postgres). */
function createDocumentReads(prisma: PrismaClient, sql: Statements): Pick<DocumentStore, 'read' | 'readMany' | 'list'> {
  return {
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

    async list(spaceId, sessionId) {
      const rows = await prisma.memoryDocument.findMany({
        where: { spaceId, deleted: false, sessionKey: { in: ['', sessionId] } },
        orderBy: [{ path: 'asc' }, { sessionKey: 'asc' }],
      });
      return rows.map(toDocumentRecord);
    },
  };
}
