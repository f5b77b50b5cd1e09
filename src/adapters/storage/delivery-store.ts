// Delivery marks on answers, memory runs and reset segments: set when core stores them, cleared
// when a chat adapter has put them in its outbox. What stays marked after a crash is emitted again.
import type { DeliveryStore, PendingDeliveries } from '../../core/store.js';
import type pg from 'pg';
import { Prisma, type PrismaClient } from '../../../prisma/generated/client.js';
import { statementsOn } from './statements.js';
import { parseRequest } from './review-store.js';

/** Creates the DeliveryStore; on Postgres the look every runner load makes goes to `pool`. */
export function createDeliveryStore(prisma: PrismaClient, pool?: pg.Pool): DeliveryStore {
  const sql = statementsOn(prisma, pool);
  return {
    async pending(sessionId) {
      // Nearly always nothing is owed (every runner load asks): one look first, the reads after.
      const [look] = await sql.rows<{ owed: boolean }>(Prisma.sql`
        SELECT EXISTS (SELECT 1 FROM context_messages m JOIN segments g ON g.id = m.segment_id WHERE g.session_id = ${sessionId} AND m.awaiting_delivery)
            OR EXISTS (SELECT 1 FROM memory_runs WHERE session_id = ${sessionId} AND awaiting_delivery)
            OR EXISTS (SELECT 1 FROM segments WHERE session_id = ${sessionId} AND awaiting_delivery) AS owed`);
      if (look?.owed !== true) return { answers: [], memoryRuns: [], resets: [] };
      const [answers, memoryRuns, resets] = await Promise.all([
        prisma.contextMessage.findMany({
          where: { awaitingDelivery: true, segment: { sessionId } },
          select: { segmentId: true, seq: true, content: true },
          orderBy: [{ createdAt: 'asc' }, { seq: 'asc' }],
        }),
        prisma.memoryRun.findMany({
          where: { awaitingDelivery: true, sessionId },
          select: { id: true, round: true, promptTokens: true, cachedTokens: true, completionTokens: true, request: true, transcript: true },
          orderBy: { startedAt: 'asc' },
        }),
        prisma.segment.findMany({ where: { awaitingDelivery: true, sessionId }, orderBy: { ordinal: 'asc' } }),
      ]);
      const previous = resets.length
        ? await prisma.segment.findMany({ where: { sessionId, ordinal: { in: resets.map((segment) => segment.ordinal - 1) } }, select: { id: true, ordinal: true, contextTokens: true } })
        : [];
      const tokensBefore = new Map(previous.map((segment) => [segment.ordinal + 1, segment.contextTokens]));
      const previousIds = new Map(previous.map((segment) => [segment.ordinal + 1, segment.id]));
      const result: PendingDeliveries = {
        answers: answers.map((row) => ({ segmentId: row.segmentId, seq: row.seq, text: answerText(row.content) })),
        memoryRuns: memoryRuns.map((run) => ({
          memoryRunId: run.id,
          round: run.round,
          usage: { promptTokens: run.promptTokens, cachedTokens: run.cachedTokens, completionTokens: run.completionTokens },
          request: parseRequest(run.request),
          transcript: Array.isArray(run.transcript) ? run.transcript : [],
        })),
        resets: resets.map((segment) => ({
          segmentId: segment.id,
          previousSegmentId: previousIds.get(segment.ordinal) ?? null,
          ordinal: segment.ordinal,
          tokensBefore: tokensBefore.get(segment.ordinal) ?? 0,
          tokensAfter: segment.startTokens,
          carriedMessages: segment.carriedMessages,
          ...(segment.resetReason === 'context-full' ? { reason: 'context-full' as const } : {}),
        })),
      };
      return result;
    },

    async sessionsWithPending() {
      const rows = await prisma.$queryRaw<Array<{ id: string }>>`
        SELECT g.session_id AS id FROM context_messages m JOIN segments g ON g.id = m.segment_id WHERE m.awaiting_delivery
        UNION SELECT session_id FROM memory_runs WHERE awaiting_delivery
        UNION SELECT session_id FROM segments WHERE awaiting_delivery`;
      return rows.map((row) => row.id);
    },

    async markAnswer(segmentId, seq) {
      await prisma.contextMessage.updateMany({ where: { segmentId, seq, awaitingDelivery: true }, data: { awaitingDelivery: false } });
    },

    async markMemoryRun(memoryRunId) {
      await prisma.memoryRun.updateMany({ where: { id: memoryRunId, awaitingDelivery: true }, data: { awaitingDelivery: false } });
    },

    async markReset(segmentId) {
      await prisma.segment.updateMany({ where: { id: segmentId, awaitingDelivery: true }, data: { awaitingDelivery: false } });
    },
  };
}

function answerText(content: string): string {
  const parsed = JSON.parse(content) as { content?: unknown };
  return typeof parsed.content === 'string' ? parsed.content : '';
}
