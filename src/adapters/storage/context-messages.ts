// A segment's messages (the hot path of every step): the current segment loaded, messages
// appended at their positions (a second writer refused), rewritten, and tool calls marked begun.
import { ConflictError } from '../../core/errors.js';
import type { ContextStore, StoredMessage } from '../../core/store.js';
import { Prisma, type ContextMessage, type PrismaClient, type Segment } from '../../../prisma/generated/client.js';
import { messageColumns, messageValues, markStarted, toMessageRow, toSegmentRecord, toStoredMessage } from './context-rows.js';
import { insertModelCall, isUniqueViolation, pickDefined } from './prisma-support.js';
import type { Statements } from './statements.js';

type MessageMethods = Pick<ContextStore, 'load' | 'segmentMessages' | 'append' | 'appendInit' | 'rewriteMessages' | 'updateSegment' | 'markToolCallStarted'>;

/** The message methods; `hot` carries the statements of every step (pg's pool on Postgres). */
export function createContextMessages(prisma: PrismaClient, hot: Statements): MessageMethods {
  /**
   * After a failed insert of `entries`: a retry of a write whose first attempt committed but whose
   * answer was lost (a dropped connection) finds its own rows, which is success; other messages at
   * those positions mean a second writer (ConflictError); any other failure is rethrown.
   */
  async function refuseUnlessOwn(error: unknown, segmentId: string, entries: StoredMessage[]): Promise<void> {
    if (!isUniqueViolation(error)) throw error;
    const existing = await prisma.contextMessage.findMany({ where: { segmentId, seq: { in: entries.map((entry) => entry.seq) } }, select: { seq: true, content: true } });
    const stored = new Map(existing.map((row) => [row.seq, row.content]));
    if (entries.every((entry) => stored.get(entry.seq) === JSON.stringify(entry.message))) return;
    throw new ConflictError(`context position ${entries[0]?.seq} is taken: another replica wrote this session`);
  }

  return {
    async load(sessionId) {
      // One statement (every runner load and reload): the current segment with its messages.
      const rows = await hot.rows<LoadedRow>(Prisma.sql`
        SELECT g.id, g.session_id AS "sessionId", g.ordinal, g.last_step AS "lastStep", g.summarizer_rounds AS "summarizerRounds",
               g.decider_rounds AS "deciderRounds", g.decider_due_in AS "deciderDueIn", g.context_tokens AS "contextTokens",
               g.context_tokens_seq AS "contextTokensSeq", g.carried_messages AS "carriedMessages",
               m.segment_id AS "segmentId", m.seq, m.content, m.is_init AS "isInit", m.is_marker AS "isMarker",
               m.memory_run_id AS "memoryRunId", m.started_tool_call_ids AS "startedToolCallIds"
        FROM sessions s
        LEFT JOIN segments g ON g.id = s.current_segment_id
        LEFT JOIN context_messages m ON m.segment_id = g.id
        WHERE s.id = ${sessionId}
        ORDER BY m.seq`);
      const [first] = rows;
      if (!first) throw new Error(`session ${sessionId} does not exist`);
      if (first.id === null) throw new Error(`session ${sessionId} has no current segment`);
      const segment = toSegmentRecord(first as LoadedRow & { id: string });
      const messages = first.seq === null ? [] : rows.map((row) => toStoredMessage({ ...row, seq: row.seq ?? 0 }));
      return { segment, messages };
    },

    async segmentMessages(segmentId) {
      const rows = await prisma.contextMessage.findMany({ where: { segmentId }, orderBy: { seq: 'asc' } });
      return rows.map(toStoredMessage);
    },

    async append(segmentId, entry, options = {}) {
      // One statement (the hot path of every step): the message, and when given the segment's
      // token count and the call's usage row. The unique (segment_id, seq) refuses a second
      // writer at the same position (and with it the usage row: the caller records that apart).
      const companions = [
        ...(options.contextTokens === undefined ? [] : [Prisma.sql`segment AS (UPDATE segments SET context_tokens = ${options.contextTokens}, context_tokens_seq = ${entry.seq} WHERE id = ${segmentId})`]),
        ...(options.usage === undefined ? [] : [Prisma.sql`usage AS (${insertModelCall(options.usage)})`]),
        ...(options.startCall === undefined ? [] : [Prisma.sql`started AS (${markStarted(segmentId, options.startCall.seq, options.startCall.callId)})`]),
        // R21: one more step of the session's runs, counted where the answer is stored.
        ...(options.workerStepOf === undefined ? [] : [Prisma.sql`step AS (UPDATE sessions SET worker_steps = worker_steps + 1 WHERE id = ${options.workerStepOf})`]),
      ];
      const ctes = companions.length === 0 ? Prisma.empty : Prisma.sql`WITH ${Prisma.join(companions, ', ')} `;
      try {
        await hot.run(Prisma.sql`${ctes}INSERT INTO context_messages ${messageColumns} VALUES ${messageValues(segmentId, entry)}`);
      } catch (error) {
        await refuseUnlessOwn(error, segmentId, [entry]);
      }
    },

    async appendInit(segmentId, entries) {
      if (entries.length === 0) return;
      try {
        await hot.run(Prisma.sql`INSERT INTO context_messages ${messageColumns} VALUES ${Prisma.join(entries.map((entry) => messageValues(segmentId, entry)))}`);
      } catch (error) {
        await refuseUnlessOwn(error, segmentId, entries);
      }
    },

    async rewriteMessages(segmentId, entries) {
      if (entries.length === 0) return;
      // Only what the message says changes (its text and search text); role, flags and tool-call ids stay.
      const rows = entries.map((entry) => toMessageRow(segmentId, { ...entry, isInit: false, isMarker: false, memoryRunId: null }));
      await hot.run(Prisma.sql`
        UPDATE context_messages m SET content = c.content, search_text = c.search_text
        FROM unnest(${rows.map((row) => row.seq)}::int[], ${rows.map((row) => row.content)}::text[], ${rows.map((row) => row.searchText ?? '')}::text[]) AS c(seq, content, search_text)
        WHERE m.segment_id = ${segmentId} AND m.seq = c.seq`);
    },

    async updateSegment(segmentId, patch) {
      const data = pickDefined(patch, ['lastStep', 'summarizerRounds', 'deciderRounds', 'deciderDueIn', 'contextTokens']);
      await prisma.segment.update({ where: { id: segmentId }, data });
    },

    async markToolCallStarted(segmentId, seq, callId) {
      await hot.run(markStarted(segmentId, seq, callId));
    },
  };
}

/** A row of load(): the segment's columns (null without one) beside each of its messages (null without any). */
type LoadedRow = { id: string | null; seq: number | null } & Pick<Segment, 'sessionId' | 'ordinal' | 'lastStep' | 'summarizerRounds' | 'deciderRounds' | 'deciderDueIn' | 'contextTokens' | 'contextTokensSeq' | 'carriedMessages'>
  & Pick<ContextMessage, 'segmentId' | 'content' | 'isInit' | 'isMarker' | 'memoryRunId' | 'startedToolCallIds'>;
