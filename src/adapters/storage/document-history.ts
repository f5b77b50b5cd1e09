// The history of memory documents for people reviewing it (R13): versions by document and by
// memory run, what a run changed and what came after, the run to undo, runs marked reviewed.
import type { DocumentStore, RunDocumentChange } from '../../core/store.js';
import type { PrismaClient } from '../../../prisma/generated/client.js';
import { toVersionRecord } from './document-changes.js';

type HistoryMethods = Pick<DocumentStore, 'versions' | 'history' | 'versionsByRun' | 'runChanges' | 'latestRevertibleRun' | 'markReviewed'>;

/** The history methods. */
export function createDocumentHistory(prisma: PrismaClient): HistoryMethods {
  return {
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
