// The durable outbox (product.md "Reliability promises"): every platform write is stored with an
// idempotency key before it is sent, so a crash or a platform outage loses nothing and a repeated
// event enqueues nothing new. A sender per platform (outbox-sender.ts) sends them; the platform
// message ids it records let later edits and reactions name their target by key.
import { storableJson } from '../../core/text-hygiene.js';
import type { Logger } from '../../log.js';
import type { Prisma, PrismaClient } from '../storage/generated/client.js';
import { OutboxSender, type Deliver, type SenderOptions } from './outbox-sender.js';

/** A write to enqueue. */
export interface OutboxEntry {
  /** Unique per intended write, e.g. "answer:<segmentId>:<seq>:<part>"; a repeat is a no-op. */
  idempotencyKey: string;
  sessionId: string | null;
  platform: string;
  /** Interpreted by the platform's deliver function (post, update, react, …). */
  operation: string;
  payload: Prisma.InputJsonObject;
  /** Key of an earlier item whose platform message this one edits or reacts to. */
  targetKey?: string;
  /** Only the newest pending item per (targetKey, operation) is sent; older ones are superseded. */
  replacesPending?: boolean;
  /**
   * Pending items of the same target with these operations are superseded when this one is
   * stored (the final answer makes the stream's pending edits pointless).
   */
  supersedes?: readonly string[];
  /**
   * The target item itself is superseded when it is still pending and was never tried (it cannot
   * have reached the platform): a stream message the final answer would replace at once.
   */
  supersedesUntriedTarget?: boolean;
  /**
   * The writer's session lease token. The write is refused when the lease has passed to another
   * replica since (a larger token exists): a replica that lost its lease cannot post.
   */
  fencingToken?: bigint;
  /**
   * Key of an earlier item this one undoes (remove a reaction that `cancels` adds). When that item
   * is still pending and was never tried, it is dropped and this one is not stored: neither is sent.
   * Only enqueueAll honours it.
   */
  cancels?: string;
  /**
   * Platform message key of a steer: the write is stored only while that steer is still queued
   * (a 👀 on a message a worker already took, on any replica, would only be taken back).
   */
  whileSteerQueued?: string;
}

/** The outbox table, and the senders that drain it. */
export class Outbox {
  private readonly senders = new Map<string, OutboxSender>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly log: Logger,
  ) {}

  /**
   * Stores the write unless its key exists or its fencing token is stale; wakes the local sender.
   * `inserted` false = a duplicate, or (with `fenced`) a write of a replica that lost its lease.
   */
  async enqueue(entry: OutboxEntry): Promise<{ inserted: boolean; fenced?: boolean }> {
    const { idempotencyKey, sessionId, platform, operation } = entry;
    // jsonb cannot hold NUL (a model may echo one from a page): it is replaced, the post goes out.
    const payload = storableJson(entry.payload);
    const targetKey = entry.targetKey ?? null;
    const fencingToken = entry.fencingToken ?? null;
    // Superseded with the insert: older pending items of the same target, and maybe the target.
    const supersededOperations = targetKey === null ? [] : [...(entry.replacesPending ? [operation] : []), ...(entry.supersedes ?? [])];
    const supersedesTarget = targetKey !== null && entry.supersedesUntriedTarget === true;
    const steerKey = entry.whileSteerQueued ?? null;
    // One statement: the lease check and the insert cannot be separated by a take-over, and a card
    // shows its latest state only, so older unsent edits of the same target are superseded with it
    // (the UPDATE sees the table as it was before the INSERT, so never the new row).
    const rows = await this.prisma.$queryRaw<Array<{ inserted: number }>>`
      WITH inserted AS (
        INSERT INTO outbox (idempotency_key, session_id, platform, operation, payload, target_key, fencing_token)
        SELECT ${idempotencyKey}, ${sessionId}, ${platform}, ${operation}, ${JSON.stringify(payload)}::jsonb, ${targetKey}, ${fencingToken}::bigint
        WHERE (${fencingToken}::bigint IS NULL OR NOT EXISTS (
            SELECT 1 FROM session_leases l WHERE l.session_id = ${sessionId} AND l.fencing_token > ${fencingToken}::bigint))
          AND (${steerKey}::text IS NULL OR EXISTS (
            SELECT 1 FROM steer_messages m WHERE m.platform_message_key = ${steerKey} AND m.status = 'queued'))
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id),
      superseded AS (
        UPDATE outbox SET status = 'superseded'
        WHERE status = 'pending' AND id < (SELECT id FROM inserted)
          AND ((target_key = ${targetKey} AND operation = ANY(${supersededOperations}::text[]))
            OR (${supersedesTarget}::boolean AND idempotency_key = ${targetKey} AND attempts = 0)))
      SELECT count(*)::int AS inserted FROM inserted`;
    const inserted = rows[0]?.inserted ?? 0;
    if (inserted === 0 && fencingToken !== null) {
      const exists = await this.prisma.$queryRaw<unknown[]>`SELECT 1 FROM outbox WHERE idempotency_key = ${idempotencyKey}`;
      if (exists.length === 0) {
        this.log.warn({ key: idempotencyKey, fencingToken: String(fencingToken) }, 'outbox-write-fenced');
        return { inserted: false, fenced: true };
      }
    }
    if (inserted > 0) this.senders.get(platform)?.wake();
    return { inserted: inserted > 0 };
  }

  /**
   * Stores several writes in one statement, in the given order (keys that exist are skipped);
   * honours `cancels` only (no fencing, replacesPending or whileSteerQueued). Returns how many were stored.
   */
  async enqueueAll(entries: readonly OutboxEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    if (entries.some((entry) => entry.fencingToken !== undefined || entry.replacesPending || entry.supersedes || entry.supersedesUntriedTarget || entry.whileSteerQueued !== undefined)) {
      throw new Error('enqueueAll takes no fencing token, replacesPending or whileSteerQueued: use enqueue');
    }
    const column = <T>(pick: (entry: OutboxEntry) => T) => entries.map(pick);
    const cancels = entries.flatMap((entry) => (entry.cancels === undefined ? [] : [entry.cancels]));
    // An untried pending item is only ever claimed by a sender's UPDATE, which locks it: this UPDATE
    // waits for that and then sees 'sending', so an item that may have reached the platform is
    // never dropped, and its undoing item is stored.
    const rows = await this.prisma.$queryRaw<Array<{ inserted: number }>>`
      WITH cancelled AS (
        UPDATE outbox SET status = 'superseded'
        WHERE idempotency_key = ANY(${cancels}::text[]) AND status = 'pending' AND attempts = 0
        RETURNING idempotency_key),
      inserted AS (
        INSERT INTO outbox (idempotency_key, session_id, platform, operation, payload, target_key)
        SELECT e.key, e.session_id, e.platform, e.operation, e.payload, e.target_key
        FROM unnest(${column((entry) => entry.idempotencyKey)}::text[], ${column((entry) => entry.sessionId)}::text[],
          ${column((entry) => entry.platform)}::text[], ${column((entry) => entry.operation)}::text[],
          ${column((entry) => JSON.stringify(storableJson(entry.payload)))}::jsonb[], ${column((entry) => entry.targetKey ?? null)}::text[],
          ${column((entry) => entry.cancels ?? null)}::text[])
          WITH ORDINALITY AS e(key, session_id, platform, operation, payload, target_key, cancels, ordinal)
        WHERE e.cancels IS NULL OR e.cancels NOT IN (SELECT idempotency_key FROM cancelled)
        ORDER BY e.ordinal
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING platform)
      SELECT count(*)::int AS inserted FROM inserted`;
    const inserted = rows[0]?.inserted ?? 0;
    if (inserted > 0) for (const platform of new Set(column((entry) => entry.platform))) this.senders.get(platform)?.wake();
    return inserted;
  }

  /** The platform message id of a sent item, or null. */
  async messageIdOf(idempotencyKey: string): Promise<string | null> {
    const rows = await this.prisma.$queryRaw<Array<{ platform_message_id: string | null }>>`
      SELECT platform_message_id FROM outbox WHERE idempotency_key = ${idempotencyKey}`;
    return rows[0]?.platform_message_id ?? null;
  }

  /** Starts the sender of a platform (one per platform and process). */
  startSender(platform: string, deliver: Deliver, options: SenderOptions = {}): OutboxSender {
    const sender = new OutboxSender(this.prisma, platform, deliver, options, this.log);
    this.senders.set(platform, sender);
    sender.start();
    return sender;
  }
}
