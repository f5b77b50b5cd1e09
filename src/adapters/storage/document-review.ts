// The parts of the DocumentStore that serve people reviewing memory (product.md "Review memory"):
// a document by id, the space's documents with their last change, pinned lines, edit drafts.
import { ConflictError } from '../../core/errors.js';
import { hasLine, pinText } from '../../core/pinned-lines.js';
import type { DocumentAuthor, DocumentRecord, DocumentStore, DocumentSummary } from '../../core/store.js';
import type { MemoryDocument, MemoryDocumentVersion, PrismaClient } from '../../../prisma/generated/client.js';
import type { TransactionClient } from './prisma-support.js';

type ReviewMethods = Pick<DocumentStore, 'get' | 'spaceDocuments' | 'pin' | 'unpin' | 'saveDraft' | 'draft'>;

/** How long a draft stays usable (ms): a person edits again within minutes or not at all. */
const draftLifetimeMs = 24 * 60 * 60_000;

/** The review methods; `lock` (a row locked FOR UPDATE) comes from document-store.ts. */
export function createDocumentReviewMethods(prisma: PrismaClient, lock: (tx: TransactionClient, documentId: string) => Promise<MemoryDocument>): ReviewMethods {
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
