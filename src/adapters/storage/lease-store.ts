// Session leases on Postgres (or PGlite): one row per session, taken and renewed with single
// statements so two replicas can never both believe they hold it.
import type { Lease, LeaseStore } from '../../core/store.js';
import type pg from 'pg';
import { Prisma, type PrismaClient } from '../../../prisma/generated/client.js';
import { statementsOn } from './statements.js';
import { guardStore } from './storage-errors.js';

interface LeaseRow {
  session_id: string;
  owner: string;
  fencing_token: bigint;
  expires_at: Date;
  /** expires_at − now() in ms, on the database's clock. */
  valid_for_ms: number;
}

/** Creates the LeaseStore; on Postgres its statements go to `pool` (statements.ts). */
export function createLeaseStore(prisma: PrismaClient, pool?: pg.Pool): LeaseStore {
  const sql = statementsOn(prisma, pool);
  return guardStore<LeaseStore>({
    async acquire(sessionId, owner, ttlMs) {
      // Taken when released, expired, or already ours. The token grows only when the lease
      // changes hands: a replica re-claiming its own lease keeps it, so its queued writes stay valid.
      const rows = await sql.rows<LeaseRow>(Prisma.sql`
        INSERT INTO session_leases (session_id, owner, fencing_token, expires_at, released)
        VALUES (${sessionId}, ${owner}, 1, now() + ${ttlMs} * interval '1 millisecond', false)
        ON CONFLICT (session_id) DO UPDATE SET
          owner = EXCLUDED.owner,
          fencing_token = CASE WHEN session_leases.owner = EXCLUDED.owner THEN session_leases.fencing_token
                               ELSE session_leases.fencing_token + 1 END,
          expires_at = EXCLUDED.expires_at,
          released = false
        WHERE session_leases.owner = EXCLUDED.owner OR session_leases.released OR session_leases.expires_at <= now()
        RETURNING session_id, owner, fencing_token, expires_at, ${validForMs}`);
      const row = rows[0];
      return row ? toLease(row) : null;
    },

    async renewAll(owner, leases, ttlMs) {
      if (leases.length === 0) return new Map();
      const rows = await sql.rows<{ session_id: string; valid_for_ms: number }>(Prisma.sql`
        UPDATE session_leases l SET expires_at = now() + ${ttlMs} * interval '1 millisecond'
        FROM unnest(${leases.map((lease) => lease.sessionId)}::text[], ${leases.map((lease) => lease.fencingToken)}::bigint[]) AS held(session_id, fencing_token)
        WHERE l.session_id = held.session_id AND l.owner = ${owner} AND l.fencing_token = held.fencing_token AND NOT l.released
        RETURNING l.session_id, ${validForMs}`);
      return new Map(rows.map((row) => [row.session_id, Number(row.valid_for_ms)]));
    },

    async release(sessionId, owner, fencingToken) {
      await sql.run(Prisma.sql`
        UPDATE session_leases SET released = true, expires_at = now()
        WHERE session_id = ${sessionId} AND owner = ${owner} AND fencing_token = ${fencingToken}`);
    },

    async currentToken(sessionId) {
      const rows = await sql.rows<{ fencing_token: bigint }>(Prisma.sql`
        SELECT fencing_token FROM session_leases WHERE session_id = ${sessionId}`);
      return Number(rows[0]?.fencing_token ?? 0n);
    },

    async orphaned(graceMs) {
      // A driver died mid-work (its lease is still named but expired), or work is waiting with
      // nobody holding the lease (a wake-up was missed; a person's remember / forget counts as
      // work). Failed runs that wait for a person are neither: their lease was released and
      // nothing is queued.
      const rows = await sql.rows<{ id: string }>(Prisma.sql`
        SELECT s.id FROM sessions s
        LEFT JOIN session_leases l ON l.session_id = s.id
        WHERE (l.session_id IS NOT NULL AND NOT l.released AND l.expires_at <= now())
           OR ((l.session_id IS NULL OR l.released OR l.expires_at <= now()) AND (
                s.reset_requested
                OR EXISTS (
                  SELECT 1 FROM memory_review_events e
                  WHERE e.request_pending AND e.session_id = s.id AND e.created_at < now() - ${graceMs} * interval '1 millisecond')
                OR (NOT s.paused AND EXISTS (
                  SELECT 1 FROM steer_messages q
                  WHERE q.session_id = s.id AND q.status = 'queued' AND q.received_at < now() - ${graceMs} * interval '1 millisecond'))))
        ORDER BY s.id`);
      return rows.map((row) => row.id);
    },
  });
}

/** What is left of the lease when the statement ran, measured on the database's clock (ms). */
const validForMs = Prisma.raw(`(extract(epoch FROM (expires_at - now())) * 1000)::float8 AS valid_for_ms`);

function toLease(row: LeaseRow): Lease {
  return { sessionId: row.session_id, owner: row.owner, fencingToken: Number(row.fencing_token), expiresAt: row.expires_at, validForMs: Number(row.valid_for_ms) };
}
