// Steer messages taken at a checkpoint (R9): each queued message once, with the text that was
// rendered, inserted into the segment in the same statement that marks it taken.
import { ConflictError } from '../../core/errors.js';
import type { ContextStore } from '../../core/store.js';
import { Prisma, type SteerMessage } from '../../../prisma/generated/client.js';
import { toMessageRow } from './context-rows.js';
import { isUniqueViolation } from './prisma-support.js';
import type { Statements } from './statements.js';
import { steerColumns, toSteerRecord } from './steer-store.js';

/** ContextStore.takeSteers on `hot` (pg's pool on Postgres). */
export function createSteerTaking(hot: Statements): Pick<ContextStore, 'takeSteers'> {
  return {
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
  };
}
