// The parts of the DocumentStore that serve people reviewing memory (docs/product.md "Review memory"):
// a document by id, the space's documents with their last change, pinned lines, edit drafts.
import { ConflictError } from '../../core/errors.js';
import { hasLine, pinText } from '../../core/pinned-lines.js';
import type { DocumentAuthor, DocumentRecord, DocumentStore, DocumentSummary } from '../../core/store.js';
import { Prisma, type MemoryDocument, type MemoryDocumentVersion, type PrismaClient } from '../../../prisma/generated/client.js';
import { searchQuery, type TransactionClient } from './prisma-support.js';
import { rankedCandidates, searchableChars, type SearchGuard } from './search-guard.js';

type ReviewMethods = Pick<DocumentStore, 'get' | 'spaceDocuments' | 'search' | 'pin' | 'unpin' | 'saveDraft' | 'draft'>;

/** How long a draft stays usable (ms): a person edits again within minutes or not at all. */
const draftLifetimeMs = 24 * 60 * 60_000;

/** The review methods; `lock` (a row locked FOR UPDATE) comes from document-store.ts. */
export function createDocumentReviewMethods(prisma: PrismaClient, lock: (tx: TransactionClient, documentId: string) => Promise<MemoryDocument>, search: SearchGuard): ReviewMethods {
  return {
    async get(documentId) {
      const row = await prisma.memoryDocument.findUnique({ where: { id: documentId } });
      return row ? toDocumentRecord(row) : null;
    },

    async spaceDocuments(spaceId) {
      const rows = await prisma.memoryDocument.findMany({ where: { spaceId, sessionKey: '', deleted: false }, orderBy: { path: 'asc' } });
      if (rows.length === 0) return [];
      const latest = await prisma.memoryDocumentVersion.findMany({
        where: { OR: rows.map((row) => ({ documentId: row.id, version: row.version })) },
      });
      const byDocument = new Map(latest.map((version) => [version.documentId, version]));
      return rows.flatMap((row): DocumentSummary[] => {
        const version = byDocument.get(row.id);
        if (!version) return [];
        return [{ document: toDocumentRecord(row), lastChange: { version: version.version, author: authorOf(version), reason: version.reason, createdAt: version.createdAt } }];
      });
    },

    async search(spaceId, query, limit, searcher) {
      if (query.trim() === '' || limit <= 0) return [];
      search.admit(searcher);
      const rows = await search.query<{ path: string; version: number; snippet: string }>(prisma, documentsSearch(spaceId, query, limit));
      return rows.map((row) => ({ path: row.path, version: row.version, snippet: row.snippet.replace(/\s+/g, ' ').trim().slice(0, 300) }));
    },

    pin(documentId, line) {
      const pinned = pinText(line);
      return prisma.$transaction(async (tx) => {
        const current = await lock(tx, documentId);
        if (current.deleted || !hasLine(current.content, pinned)) {
          throw new ConflictError(`${current.path} has no line "${pinned.slice(0, 80)}" any more (it changed since you looked); look again`);
        }
        if (current.pinnedLines.includes(pinned)) return toDocumentRecord(current);
        return toDocumentRecord(await tx.memoryDocument.update({ where: { id: documentId }, data: { pinnedLines: [...current.pinnedLines, pinned] } }));
      });
    },

    unpin(documentId, line) {
      const pinned = pinText(line);
      return prisma.$transaction(async (tx) => {
        const current = await lock(tx, documentId);
        if (!current.pinnedLines.includes(pinned)) return toDocumentRecord(current);
        return toDocumentRecord(await tx.memoryDocument.update({ where: { id: documentId }, data: { pinnedLines: current.pinnedLines.filter((pin) => pin !== pinned) } }));
      });
    },

    async saveDraft(draft) {
      // Old drafts go as new ones come: nobody edits from a day-old conflict.
      await prisma.memoryEditDraft.deleteMany({ where: { createdAt: { lt: new Date(Date.now() - draftLifetimeMs) } } });
      const row = await prisma.memoryEditDraft.create({ data: { documentId: draft.documentId, baseVersion: draft.baseVersion, part: draft.part, pieces: draft.pieces, authorId: draft.authorId } });
      return row.id;
    },

    async draft(id, authorId) {
      const row = await prisma.memoryEditDraft.findUnique({ where: { id } });
      if (!row || row.authorId !== authorId || Date.now() - row.createdAt.getTime() > draftLifetimeMs) return null;
      return { id: row.id, documentId: row.documentId, baseVersion: row.baseVersion, part: row.part, pieces: row.pieces, authorId: row.authorId };
    },
  };
}

/**
 * The statement of DocumentStore.search (exported so its plan can be checked): as context search
 * (context-store.ts), `simple` words from the stored search_vector and its GIN index (looked up
 * alone), the newest matches ranked, headlines from the searchable part only.
 */
export function documentsSearch(spaceId: string, query: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    WITH query AS (SELECT ${searchQuery(query)} AS q),
    hits AS MATERIALIZED (
      SELECT d.id, d.space_id, d.session_key, d.deleted, d.updated_at FROM memory_documents d WHERE d.search_vector @@ ${searchQuery(query)}),
    matched AS (SELECT id, updated_at FROM hits WHERE space_id = ${spaceId} AND session_key = '' AND NOT deleted),
    candidates AS (SELECT * FROM matched ORDER BY updated_at DESC, id LIMIT ${rankedCandidates}::int),
    ranked AS (
      SELECT d.id, d.path, d.version, ts_rank(d.search_vector, query.q) AS rank
      FROM query, candidates c JOIN memory_documents d ON d.id = c.id
      ORDER BY rank DESC, d.path
      LIMIT ${limit}::int)
    SELECT ranked.path, ranked.version,
           ts_headline('simple', left(d.content, ${searchableChars}::int), query.q, 'MaxWords=30, MinWords=10, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**') AS snippet
    FROM query, ranked JOIN memory_documents d ON d.id = ranked.id
    ORDER BY ranked.rank DESC, ranked.path`;
}

/** A document row as core sees it. */
export function toDocumentRecord(row: MemoryDocument): DocumentRecord {
  return {
    id: row.id,
    spaceId: row.spaceId,
    sessionKey: row.sessionKey,
    path: row.path,
    version: row.version,
    content: row.content,
    deleted: row.deleted,
    pinnedLines: row.pinnedLines ?? [],
    updatedAt: row.updatedAt,
  };
}

/** The author of a version row (the browser's "last author"). */
function authorOf(row: MemoryDocumentVersion): DocumentAuthor {
  switch (row.authorKind) {
    case 'summarizer':
      return { kind: 'summarizer', memoryRunId: row.memoryRunId ?? row.authorId };
    case 'worker':
      return { kind: 'worker', sessionId: row.authorId };
    case 'person':
      return { kind: 'person', userId: row.authorId, name: row.authorName };
    default:
      return { kind: 'system' };
  }
}
