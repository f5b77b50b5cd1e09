// Segment rotation on reset (R6): the old segment ended, the new one started with the carried
// messages, and the session pointed at it, in one transaction behind the session's row lock (R8).
import { ConflictError } from '../../core/errors.js';
import type { ContextStore } from '../../core/store.js';
import type { PrismaClient } from '../../../prisma/generated/client.js';
import { toMessageRow, toSegmentRecord } from './context-rows.js';

/** ContextStore.startSegment. */
export function createSegmentRotation(prisma: PrismaClient): Pick<ContextStore, 'startSegment'> {
  return {
    startSegment(sessionId, next) {
      return prisma.$transaction(async (tx) => {
        // The session row is locked first: a second reset of the same segment waits here, then
        // finds it no longer current (R8) instead of resetting the fresh segment again.
        const locked = await tx.$queryRaw<Array<{ current_segment_id: string | null }>>`
          SELECT current_segment_id FROM sessions WHERE id = ${sessionId} FOR UPDATE`;
        if (locked[0]?.current_segment_id !== next.fromSegmentId) {
          throw new ConflictError(`segment ${next.fromSegmentId} is no longer current: the session was reset already`);
        }
        const previous = await tx.segment.update({ where: { id: next.fromSegmentId }, data: { endedAt: new Date() } });
        const segment = await tx.segment.create({
          data: {
            sessionId, ordinal: previous.ordinal + 1, carriedMessages: next.carriedMessages, startTokens: next.startTokens,
            contextTokens: next.startTokens, contextTokensSeq: next.messages.length, lastStep: next.lastStep, awaitingDelivery: true,
            resetReason: next.reason ?? null,
          },
        });
        // Carried copies are never owed delivery: their originals hold that mark (R17). They keep
        // their started-call marks: a call that began is never run again because it was copied (R12).
        await tx.contextMessage.createMany({
          data: next.messages.map((entry, seq) => ({ ...toMessageRow(segment.id, { ...entry, seq, awaitingDelivery: false }), startedToolCallIds: entry.startedToolCalls ?? [] })),
        });
        await tx.session.update({ where: { id: sessionId }, data: { currentSegmentId: segment.id, resetRequested: false } });
        return toSegmentRecord(segment);
      });
    },
  };
}
