// The outbox table (docs/product.md "Promises"): platform writes stored with an
// idempotency key before they are sent. The chat adapter's Outbox and its senders decide what to
// write and when; every statement they need lives here. Each acked steer and each answer costs
// several (stored, claimed, marked sent), so on Postgres they go to pg's pool as the hot
// statements of a step do (statements.ts).
import { Prisma, type PrismaClient } from '../../../prisma/generated/client.js';
import type pg from 'pg';
import { statementsOn, type Statements } from './statements.js';

/** A JSON object as stored in the outbox's payload column. */
export type OutboxPayload = { readonly [key: string]: unknown };

/** A write to store (see chat/outbox.ts OutboxEntry for what each field means). */
export interface OutboxInsert {
  idempotencyKey: string;
  sessionId: string | null;
  platform: string;
  operation: string;
  payload: OutboxPayload;
  targetKey: string | null;
  fencingToken: bigint | null;
  /** Operations of pending items of the same target superseded by this one. */
  supersededOperations: readonly string[];
  /** The untried pending target itself is superseded. */
  supersedesTarget: boolean;
  /** Stored only while this steer is still queued. */
  whileSteerQueued: string | null;
}

/** A row claimed by a sender. */
export interface OutboxClaim {
  id: bigint;
  idempotencyKey: string;
  sessionId: string | null;
  operation: string;
  payload: unknown;
  targetKey: string | null;
  attempts: number;
  targetMessageId: string | null;
  targetStatus: string | null;
}

interface ClaimedRow {
  id: bigint;
  idempotency_key: string;
  session_id: string | null;
  operation: string;
  payload: unknown;
  target_key: string | null;
  attempts: number;
  target_message_id: string | null;
  target_status: string | null;
}

/** The outbox's statements. */
export class OutboxStore {
  private readonly sql: Statements;

  /** `pool`: Postgres's (the statements skip Prisma's client); none on PGlite. */
  constructor(prisma: PrismaClient, pool?: pg.Pool) {
    this.sql = statementsOn(prisma, pool);
  }

  /**
   * Stores the write unless its key exists, its fencing token is stale or its steer was taken.
   * `fenced`: not stored because the writer's lease passed to another replica.
   */
  async insert(entry: OutboxInsert): Promise<{ inserted: boolean; fenced: boolean }> {
    const { idempotencyKey, sessionId, platform, operation, targetKey, fencingToken, supersededOperations, supersedesTarget, whileSteerQueued } = entry;
    // One statement: the lease check and the insert cannot be separated by a take-over, and a card
    // shows its latest state only, so older unsent edits of the same target are superseded with it
    // (the UPDATE sees the table as it was before the INSERT, so never the new row).
    const rows = await this.sql.rows<{ inserted: number }>(Prisma.sql`
      WITH inserted AS (
        INSERT INTO outbox (idempotency_key, session_id, platform, operation, payload, target_key, fencing_token)
        SELECT ${idempotencyKey}, ${sessionId}, ${platform}, ${operation}, ${JSON.stringify(entry.payload)}::jsonb, ${targetKey}, ${fencingToken}::bigint
        WHERE (${fencingToken}::bigint IS NULL OR NOT EXISTS (
            SELECT 1 FROM session_leases l WHERE l.session_id = ${sessionId} AND l.fencing_token > ${fencingToken}::bigint))
          AND (${whileSteerQueued}::text IS NULL OR EXISTS (
            SELECT 1 FROM steer_messages m WHERE m.platform_message_key = ${whileSteerQueued} AND m.status = 'queued'))
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id),
      superseded AS (
        UPDATE outbox SET status = 'superseded'
        WHERE status = 'pending' AND id < (SELECT id FROM inserted)
          AND ((target_key = ${targetKey} AND operation = ANY(${[...supersededOperations]}::text[]))
            OR (${supersedesTarget}::boolean AND idempotency_key = ${targetKey} AND attempts = 0)))
      SELECT count(*)::int AS inserted FROM inserted`);
    const inserted = (rows[0]?.inserted ?? 0) > 0;
    if (inserted || fencingToken === null) return { inserted, fenced: false };
    const exists = await this.sql.rows<unknown>(Prisma.sql`SELECT 1 FROM outbox WHERE idempotency_key = ${idempotencyKey}`);
    return { inserted: false, fenced: exists.length === 0 };
  }

  /**
   * Stores several writes in one statement, in order, and returns the keys it stored. A key that
   * exists (or comes twice) is skipped; a write whose `cancels` names a pending, untried item drops
   * that item and is not stored itself; a write with `whileSteerQueued` is stored only while that
   * steer is still queued.
   */
  async insertAll(entries: ReadonlyArray<Pick<OutboxInsert, 'idempotencyKey' | 'sessionId' | 'platform' | 'operation' | 'payload' | 'targetKey' | 'whileSteerQueued'> & { cancels: string | null }>): Promise<string[]> {
    const column = <T>(pick: (entry: (typeof entries)[number]) => T) => entries.map(pick);
    const cancels = entries.flatMap((entry) => (entry.cancels === null ? [] : [entry.cancels]));
    // An untried pending item is only ever claimed by a sender's UPDATE, which locks it: this UPDATE
    // waits for that and then sees 'sending', so an item that may have reached the platform is
    // never dropped, and its undoing item is stored.
    const rows = await this.sql.rows<{ key: string }>(Prisma.sql`
      WITH cancelled AS (
        UPDATE outbox SET status = 'superseded'
        WHERE idempotency_key = ANY(${cancels}::text[]) AND status = 'pending' AND attempts = 0
        RETURNING idempotency_key),
      inserted AS (
        INSERT INTO outbox (idempotency_key, session_id, platform, operation, payload, target_key)
        SELECT e.key, e.session_id, e.platform, e.operation, e.payload, e.target_key
        FROM unnest(${column((entry) => entry.idempotencyKey)}::text[], ${column((entry) => entry.sessionId)}::text[],
          ${column((entry) => entry.platform)}::text[], ${column((entry) => entry.operation)}::text[],
          ${column((entry) => JSON.stringify(entry.payload))}::jsonb[], ${column((entry) => entry.targetKey)}::text[],
          ${column((entry) => entry.cancels)}::text[], ${column((entry) => entry.whileSteerQueued)}::text[])
          WITH ORDINALITY AS e(key, session_id, platform, operation, payload, target_key, cancels, while_queued, ordinal)
        WHERE (e.cancels IS NULL OR e.cancels NOT IN (SELECT idempotency_key FROM cancelled))
          AND (e.while_queued IS NULL OR EXISTS (
            SELECT 1 FROM steer_messages m WHERE m.platform_message_key = e.while_queued AND m.status = 'queued'))
        ORDER BY e.ordinal
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING idempotency_key)
      SELECT idempotency_key AS key FROM inserted`);
    return rows.map((row) => row.key);
  }

  /** The platform message id of a sent item, or null. */
  async messageIdOf(idempotencyKey: string): Promise<string | null> {
    const rows = await this.sql.rows<{ platform_message_id: string | null }>(Prisma.sql`
      SELECT platform_message_id FROM outbox WHERE idempotency_key = ${idempotencyKey}`);
    return rows[0]?.platform_message_id ?? null;
  }

  /**
   * Claims the due head item of each session (an earlier unsent item of the same session blocks
   * the later ones, so a thread reads in order). SKIP LOCKED keeps replicas from waiting on each
   * other; the lease (next_attempt_at) hands a claim of a crashed sender to another one. The heads
   * come from one pass over the unsent items (the status index), so sent items kept for
   * retention cost nothing; items without a session are never blocked.
   */
  async claimDue(platform: string, options: { leaseMs: number; batchSize: number }): Promise<OutboxClaim[]> {
    const rows = await this.sql.rows<ClaimedRow>(Prisma.sql`
      WITH unsent AS MATERIALIZED (
        SELECT id, session_id, next_attempt_at FROM outbox
        WHERE platform = ${platform} AND status IN ('pending', 'sending')),
      heads AS (
        SELECT DISTINCT ON (session_id) id, next_attempt_at FROM unsent WHERE session_id IS NOT NULL ORDER BY session_id, id),
      due AS (
        SELECT o.id FROM outbox o
        WHERE o.id IN (
            SELECT id FROM heads WHERE next_attempt_at <= now()
            UNION ALL SELECT id FROM unsent WHERE session_id IS NULL AND next_attempt_at <= now())
          AND o.status IN ('pending', 'sending') AND o.next_attempt_at <= now()
        ORDER BY o.id
        LIMIT ${options.batchSize}::int
        FOR UPDATE OF o SKIP LOCKED)
      UPDATE outbox SET status = 'sending', attempts = outbox.attempts + 1,
        next_attempt_at = now() + make_interval(secs => ${options.leaseMs / 1000}::double precision)
      FROM due WHERE outbox.id = due.id
      RETURNING outbox.id, outbox.idempotency_key, outbox.session_id, outbox.operation, outbox.payload,
        outbox.target_key, outbox.attempts,
        (SELECT t.platform_message_id FROM outbox t WHERE t.idempotency_key = outbox.target_key) AS target_message_id,
        (SELECT t.status FROM outbox t WHERE t.idempotency_key = outbox.target_key) AS target_status`);
    return rows.map((row) => ({
      id: row.id,
      idempotencyKey: row.idempotency_key,
      sessionId: row.session_id,
      operation: row.operation,
      payload: row.payload,
      targetKey: row.target_key,
      attempts: row.attempts,
      targetMessageId: row.target_message_id,
      targetStatus: row.target_status,
    }));
  }

  /** Marks a round of items sent in one statement, with their platform message ids. */
  async markSent(sent: ReadonlyArray<{ id: bigint; platformMessageId: string | null }>): Promise<void> {
    await this.sql.run(Prisma.sql`
      UPDATE outbox SET status = 'sent', sent_at = now(), platform_message_id = s.message_id, last_error = NULL
      FROM unnest(${sent.map((item) => item.id)}::bigint[], ${sent.map((item) => item.platformMessageId)}::text[]) AS s(id, message_id)
      WHERE outbox.id = s.id`);
  }

  /** Puts a claimed item back, due again after `delayMs`. */
  async retryLater(id: bigint, delayMs: number, reason: string): Promise<void> {
    await this.sql.run(Prisma.sql`
      UPDATE outbox SET status = 'pending', last_error = ${reason},
        next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}::double precision)
      WHERE id = ${id}`);
  }

  /** Gives an item up for good. */
  async markFailed(id: bigint, reason: string): Promise<void> {
    await this.sql.run(Prisma.sql`UPDATE outbox SET status = 'failed', last_error = ${reason} WHERE id = ${id}`);
  }

  /** Deletes a platform's delivered items older than `retentionMs`; returns how many. */
  deleteDelivered(platform: string, retentionMs: number): Promise<number> {
    return this.sql.run(Prisma.sql`
      DELETE FROM outbox WHERE platform = ${platform} AND status IN ('sent', 'superseded')
        AND created_at < now() - make_interval(secs => ${retentionMs / 1000}::double precision)`);
  }
}
