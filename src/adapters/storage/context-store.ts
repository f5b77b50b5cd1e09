// The worker context: segments and their messages, byte-exact (the prompt cache depends on it),
// steer injection at checkpoints (R9), segment rotation on reset (R6) and search of originals (R15).
import { ConflictError } from '../../core/errors.js';
import type { ChatMessage } from '../../core/messages.js';
import { messageText } from '../../core/messages.js';
import { storableText } from '../../core/text-hygiene.js';
import type { ContextStore, SearchHit, SegmentRecord, StoredMessage } from '../../core/store.js';
import { Prisma, type ContextMessage, type PrismaClient, type Segment, type SteerMessage } from '../../../prisma/generated/client.js';
import type pg from 'pg';
import { insertModelCall, isUniqueViolation, pickDefined, searchQuery } from './prisma-support.js';
import { SearchGuard, rankedCandidates, searchableChars } from './search-guard.js';
import { statementsOn } from './statements.js';
import { steerColumns, toSteerRecord } from './steer-store.js';

// ts_headline fragments are bounded in words; this bounds the snippet in characters as well.
const maxSnippetChars = 300;

/** Creates the Prisma-backed ContextStore. */
export function createContextStore(prisma: PrismaClient, pool?: pg.Pool, search = new SearchGuard()): ContextStore {
  // The statements of every step; the rest (resets, search, repairs) stay on Prisma.
  const hot = statementsOn(prisma, pool);

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

    async takeSteers(sessionId, segmentId, seq, render, prepare) {
      // A look, then one statement that takes and inserts together (no transaction held across
      // the two): only a steer still queued with the text that was rendered is taken, in id
      // order; one edited, withdrawn or taken by another writer meanwhile is left alone (a
      // concurrent taker waits on the row lock, then re-checks and skips it), so no steer is
      // ever injected twice or with stale text.
      const queued = await hot.rows<SteerMessage>(Prisma.sql`
        SELECT ${steerColumns} FROM steer_messages WHERE session_id = ${sessionId} AND status = 'queued' ORDER BY id`);
      if (queued.length === 0) return [];
      const steers = queued.map(toSteerRecord);
      if (prepare) await prepare(steers);
      const rows = steers.map((steer) => toMessageRow(segmentId, { seq, message: render(steer), isInit: false, isMarker: false, memoryRunId: null }));
      let taken: Array<{ id: bigint }>;
      try {
        taken = await hot.rows<{ id: bigint }>(Prisma.sql`
          WITH candidate AS (
            SELECT * FROM unnest(${steers.map((steer) => steer.id)}::bigint[], ${steers.map((steer) => steer.text)}::text[],
                                 ${rows.map((row) => row.role)}::text[], ${rows.map((row) => row.content)}::text[],
                                 ${rows.map((row) => row.searchText ?? '')}::text[]) AS c(id, text, role, content, search_text)),
          taken AS (
            UPDATE steer_messages s SET status = 'taken', taken_at = now()
            FROM candidate c
            WHERE s.id = c.id AND s.text = c.text AND s.status = 'queued'
            RETURNING s.id),
          numbered AS (
            SELECT c.*, row_number() OVER (ORDER BY c.id) - 1 AS n FROM candidate c JOIN taken USING (id)),
          inserted AS (
            INSERT INTO context_messages (segment_id, seq, role, content, search_text)
            SELECT ${segmentId}::text, ${seq}::int + n::int, role, content, search_text FROM numbered),
          -- R21: a person's message taken begins a new run: its steps count from here.
          run AS (
            UPDATE sessions SET run_start_step = worker_steps WHERE id = ${sessionId} AND EXISTS (SELECT 1 FROM taken))
          SELECT id FROM numbered ORDER BY id`);
      } catch (error) {
        if (isUniqueViolation(error)) throw new ConflictError(`context position ${seq} is taken: another replica wrote this session`);
        throw error;
      }
      const ids = new Set(taken.map((row) => Number(row.id)));
      return steers.filter((steer) => ids.has(steer.id)).map((steer) => ({ ...steer, status: 'taken' as const }));
    },

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

    async searchOriginals(memorySpaceId, query, excludeSegmentId, limit, searcher) {
      if (query.trim() === '' || limit <= 0) return [];
      search.admit(searcher);
      const rows = await search.query<SearchRow>(prisma, originalsSearch(memorySpaceId, query, excludeSegmentId, limit));
      return rows.map((row): SearchHit => ({
        sessionId: row.sessionId,
        segmentOrdinal: row.segmentOrdinal,
        seq: row.seq,
        role: row.role,
        snippet: clip(row.snippet.replace(/\s+/g, ' ').trim(), maxSnippetChars),
      }));
    },
  };
}

/**
 * The statement of searchOriginals (exported so its plan can be checked), bounded (docs/security.md
 * "Search"): the words come from the stored search_vector through its GIN index, never parsed again
 * from whole messages; only the newest `rankedCandidates` matches are ranked, and headlines are
 * built for the rows returned, from the searchable part of their text (ts_headline parses what it
 * is given). Where a segment's originals begin is found once per segment: after its init messages
 * (seq 0…) and the copies a reset carried. The matches are looked up alone (`hits`), with the
 * query written out: the planner does not count reading a row's out-of-line vector, and given a
 * join it would rather read every message of the space and test each one (search-guard.ts).
 */
export function originalsSearch(memorySpaceId: string, query: string, excludeSegmentId: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    WITH query AS (SELECT ${searchQuery(query)} AS q),
    segs AS MATERIALIZED (
      SELECT g.id, g.session_id, g.ordinal,
             g.carried_messages + (SELECT min(i.seq) FROM context_messages i WHERE i.segment_id = g.id AND NOT i.is_init) AS first_original
      FROM segments g JOIN sessions s ON s.id = g.session_id
      WHERE s.memory_space_id = ${memorySpaceId} AND g.id <> ${excludeSegmentId}),
    hits AS MATERIALIZED (
      SELECT m.id, m.segment_id, m.seq, m.role FROM context_messages m
      WHERE m.search_vector @@ ${searchQuery(query)} AND NOT m.is_init AND NOT m.is_marker),
    matched AS (
      SELECT h.id, h.seq, h.role, segs.session_id, segs.ordinal
      FROM hits h JOIN segs ON segs.id = h.segment_id
      WHERE h.seq >= segs.first_original),
    candidates AS (SELECT * FROM matched ORDER BY id DESC LIMIT ${rankedCandidates}::int),
    ranked AS (
      SELECT c.*, ts_rank(m.search_vector, query.q) AS rank
      FROM query, candidates c JOIN context_messages m ON m.id = c.id
      ORDER BY rank DESC, c.id DESC
      LIMIT ${limit}::int)
    SELECT ranked.session_id AS "sessionId", ranked.ordinal AS "segmentOrdinal", ranked.seq, ranked.role,
           ts_headline('simple', left(m.search_text, ${searchableChars}::int), query.q,
                       'MaxWords=40, MinWords=15, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**') AS snippet
    FROM query, ranked JOIN context_messages m ON m.id = ranked.id
    ORDER BY ranked.rank DESC, ranked.id DESC`;
}

interface SearchRow {
  sessionId: string;
  segmentOrdinal: number;
  seq: number;
  role: string;
  snippet: string;
}

/** A row of load(): the segment's columns (null without one) beside each of its messages (null without any). */
type LoadedRow = { id: string | null; seq: number | null } & Pick<Segment, 'sessionId' | 'ordinal' | 'lastStep' | 'summarizerRounds' | 'deciderRounds' | 'deciderDueIn' | 'contextTokens' | 'contextTokensSeq' | 'carriedMessages'>
  & Pick<ContextMessage, 'segmentId' | 'content' | 'isInit' | 'isMarker' | 'memoryRunId' | 'startedToolCallIds'>;

const messageColumns = Prisma.raw(
  '(segment_id, seq, role, content, tool_call_id, tool_call_ids, started_tool_call_ids, is_init, is_marker, memory_run_id, awaiting_delivery, search_text)',
);

/** Marks a tool call of the assistant message at `seq` as begun (once); ids are stored as `tool_call_ids` are. */
function markStarted(segmentId: string, seq: number, callId: string): Prisma.Sql {
  const id = storableText(callId);
  return Prisma.sql`
    UPDATE context_messages SET started_tool_call_ids = array_append(started_tool_call_ids, ${id})
    WHERE segment_id = ${segmentId} AND seq = ${seq} AND NOT (${id} = ANY(started_tool_call_ids))`;
}

/** The VALUES tuple of one context message for `messageColumns` (raw statements on hot paths). */
function messageValues(segmentId: string, entry: StoredMessage): Prisma.Sql {
  const row = toMessageRow(segmentId, entry);
  return Prisma.sql`(${row.segmentId}, ${row.seq}, ${row.role}, ${row.content}, ${row.toolCallId}, ${row.toolCallIds}::text[],
    ${(entry.startedToolCalls ?? []).map(storableText)}::text[], ${row.isInit}, ${row.isMarker}, ${row.memoryRunId}, ${row.awaitingDelivery}, ${row.searchText})`;
}

/** The row of one context message; `content` is the exact JSON text the model is sent. */
function toMessageRow(segmentId: string, entry: StoredMessage): Prisma.ContextMessageCreateManyInput {
  const { message } = entry;
  return {
    segmentId,
    seq: entry.seq,
    role: message.role,
    content: JSON.stringify(message),
    toolCallId: message.tool_call_id === undefined ? null : storableText(message.tool_call_id),
    toolCallIds: (message.tool_calls ?? []).map((call) => storableText(call.id)),
    isInit: entry.isInit,
    isMarker: entry.isMarker,
    memoryRunId: entry.memoryRunId,
    awaitingDelivery: entry.awaitingDelivery ?? false,
    // Postgres text cannot hold NUL; `content` is safe because JSON.stringify escapes it.
    searchText: storableText(messageText(message)),
  };
}

function toStoredMessage(row: Pick<ContextMessage, 'segmentId' | 'seq' | 'content' | 'isInit' | 'isMarker' | 'memoryRunId' | 'startedToolCallIds'>): StoredMessage {
  return {
    seq: row.seq, message: parseMessage(row), isInit: row.isInit, isMarker: row.isMarker, memoryRunId: row.memoryRunId,
    ...(row.startedToolCallIds.length > 0 ? { startedToolCalls: row.startedToolCallIds } : {}),
  };
}

function parseMessage(row: Pick<ContextMessage, 'segmentId' | 'seq' | 'content'>): ChatMessage {
  const parsed: unknown = JSON.parse(row.content);
  if (typeof parsed !== 'object' || parsed === null || !('role' in parsed) || typeof parsed.role !== 'string') {
    throw new Error(`context message ${row.segmentId}#${String(row.seq)} is not a chat message`);
  }
  // Only this module writes the column, always from a ChatMessage.
  return parsed as ChatMessage;
}

function toSegmentRecord(row: Pick<Segment, 'id' | 'sessionId' | 'ordinal' | 'lastStep' | 'summarizerRounds' | 'deciderRounds' | 'deciderDueIn' | 'contextTokens' | 'contextTokensSeq' | 'carriedMessages'>): SegmentRecord {
  return {
    id: row.id,
    sessionId: row.sessionId,
    ordinal: row.ordinal,
    lastStep: row.lastStep,
    summarizerRounds: row.summarizerRounds,
    deciderRounds: row.deciderRounds,
    deciderDueIn: row.deciderDueIn,
    contextTokens: row.contextTokens,
    contextTokensSeq: row.contextTokensSeq,
    carriedMessages: row.carriedMessages,
  };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
