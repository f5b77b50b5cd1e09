// The durable outbox (product.md "Reliability promises"): every platform write is stored with an
// idempotency key before it is sent, so a crash or a platform outage loses nothing and a repeated
// event enqueues nothing new. A sender per platform claims items (one driver per item across
// replicas), sends them in order per session, retries honouring Retry-After, and records the
// platform message id so later edits and reactions can name their target by key.
import { PlatformError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import type { Prisma, PrismaClient } from '../storage/generated/client.js';

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
   * The writer's session lease token. The write is refused when the lease has passed to another
   * replica since (a larger token exists): a replica that lost its lease cannot post.
   */
  fencingToken?: bigint;
}

/** A claimed item as the deliver function sees it. */
export interface OutboxDelivery {
  id: bigint;
  idempotencyKey: string;
  sessionId: string | null;
  operation: string;
  payload: Prisma.JsonValue;
  targetKey: string | null;
  /** The target's platform message id, resolved from targetKey. */
  targetMessageId: string | null;
  /** 1 on the first try. */
  attempt: number;
}

/** Sends one item; returns the platform id of a created message (or nothing). */
export type Deliver = (item: OutboxDelivery) => Promise<{ platformMessageId?: string }>;

/** A platform refusal that trying again cannot fix (channel gone, bad request): fail at once. */
export class PermanentPlatformError extends PlatformError {}

/** Tunables of a sender; times in milliseconds. */
export interface SenderOptions {
  /** How long a claim holds before another sender may take the item over (default 60 s). */
  leaseMs?: number;
  /** Attempts before an item is marked failed (default 8). */
  maxAttempts?: number;
  /** Idle polling interval, for items enqueued by other replicas (default 500). */
  pollMs?: number;
  /** Backoff of attempt n without Retry-After: min(maxBackoffMs, baseBackoffMs · 2^(n−1)). */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Items claimed per round; at most one per session (default 10). */
  batchSize?: number;
  /** Sent and superseded items are deleted after this long (default 14 days). */
  retentionMs?: number;
}

interface ClaimedRow {
  id: bigint;
  idempotency_key: string;
  session_id: string | null;
  operation: string;
  payload: Prisma.JsonValue;
  target_key: string | null;
  attempts: number;
  target_message_id: string | null;
  target_status: string | null;
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
    const { idempotencyKey, sessionId, platform, operation, payload } = entry;
    const targetKey = entry.targetKey ?? null;
    const fencingToken = entry.fencingToken ?? null;
    // One statement: the lease check and the insert cannot be separated by a take-over.
    const inserted = await this.prisma.$executeRaw`
      INSERT INTO outbox (idempotency_key, session_id, platform, operation, payload, target_key, fencing_token)
      SELECT ${idempotencyKey}, ${sessionId}, ${platform}, ${operation}, ${JSON.stringify(payload)}::jsonb, ${targetKey}, ${fencingToken}::bigint
      WHERE ${fencingToken}::bigint IS NULL OR NOT EXISTS (
        SELECT 1 FROM session_leases l WHERE l.session_id = ${sessionId} AND l.fencing_token > ${fencingToken}::bigint)
      ON CONFLICT (idempotency_key) DO NOTHING`;
    if (inserted === 0 && fencingToken !== null) {
      const exists = await this.prisma.outboxItem.count({ where: { idempotencyKey } });
      if (exists === 0) {
        this.log.warn({ key: idempotencyKey, fencingToken: String(fencingToken) }, 'outbox-write-fenced');
        return { inserted: false, fenced: true };
      }
    }
    if (inserted > 0 && entry.replacesPending && targetKey !== null) {
      // A card shows its latest state only: older unsent edits are pointless API calls.
      await this.prisma.$executeRaw`
        UPDATE outbox SET status = 'superseded'
        WHERE target_key = ${targetKey} AND operation = ${operation} AND status = 'pending'
          AND id < (SELECT id FROM outbox WHERE idempotency_key = ${idempotencyKey})`;
    }
    if (inserted > 0) this.senders.get(platform)?.wake();
    return { inserted: inserted > 0 };
  }

  /** The platform message id of a sent item, or null. */
  async messageIdOf(idempotencyKey: string): Promise<string | null> {
    const row = await this.prisma.outboxItem.findUnique({ where: { idempotencyKey }, select: { platformMessageId: true } });
    return row?.platformMessageId ?? null;
  }

  /** Starts the sender of a platform (one per platform and process). */
  startSender(platform: string, deliver: Deliver, options: SenderOptions = {}): OutboxSender {
    const sender = new OutboxSender(this.prisma, platform, deliver, options, this.log);
    this.senders.set(platform, sender);
    sender.start();
    return sender;
  }
}

/** Drains one platform's items; see Outbox.startSender. */
export class OutboxSender {
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private readonly leaseMs: number;
  private readonly maxAttempts: number;
  private readonly pollMs: number;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly batchSize: number;
  private readonly retentionMs: number;
  private lastCleanupAt = 0;

  constructor(
    private readonly prisma: PrismaClient,
    readonly platform: string,
    private readonly deliver: Deliver,
    options: SenderOptions,
    private readonly log: Logger,
  ) {
    this.leaseMs = options.leaseMs ?? 60_000;
    this.maxAttempts = options.maxAttempts ?? 8;
    this.pollMs = options.pollMs ?? 500;
    this.baseBackoffMs = options.baseBackoffMs ?? 1_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 60_000;
    this.batchSize = options.batchSize ?? 10;
    this.retentionMs = options.retentionMs ?? 14 * 24 * 3_600_000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Sends due items now instead of at the next poll. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /**
   * Stops after the deliveries in flight finish, first sending what is due for up to `flushMs`
   * (graceful shutdown: answers and notes already queued go out before the process exits).
   */
  async stop(flushMs = 5_000): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    const deadline = Date.now() + flushMs;
    try {
      while (Date.now() < deadline && (await this.sendDue()) > 0);
    } catch (error) {
      this.log.warn({ err: String(error), platform: this.platform }, 'outbox-flush-failed');
    }
  }

  /** Claims and sends one round of due items; returns how many were attempted. */
  async sendDue(): Promise<number> {
    const claimed = await this.claim();
    await Promise.all(claimed.map((row) => this.send(row)));
    return claimed.length;
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      let attempted = 0;
      try {
        attempted = await this.sendDue();
      } catch (error) {
        this.log.error({ err: error, platform: this.platform }, 'outbox-round-failed');
      }
      if (attempted === 0 && this.running && !this.woken) {
        await this.cleanUp();
        await this.sleep(this.pollMs);
      }
    }
  }

  /** Deletes delivered items past retention, at most hourly (keys only matter while retries can come). */
  private async cleanUp(): Promise<void> {
    if (Date.now() - this.lastCleanupAt < 3_600_000) return;
    this.lastCleanupAt = Date.now();
    try {
      const deleted = await this.prisma.$executeRaw`
        DELETE FROM outbox WHERE platform = ${this.platform} AND status IN ('sent', 'superseded')
          AND created_at < now() - make_interval(secs => ${this.retentionMs / 1000}::double precision)`;
      if (deleted > 0) this.log.info({ platform: this.platform, deleted }, 'outbox-cleaned');
    } catch (error) {
      this.log.warn({ err: error, platform: this.platform }, 'outbox-cleanup-failed');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        done();
      };
    });
  }

  /**
   * Claims the due head item of each session (an earlier unsent item of the same session blocks
   * the later ones, so a thread reads in order). SKIP LOCKED keeps replicas from waiting on each
   * other; the lease (next_attempt_at) hands a claim of a crashed sender to another one.
   */
  private claim(): Promise<ClaimedRow[]> {
    const leaseSeconds = this.leaseMs / 1000;
    return this.prisma.$queryRaw<ClaimedRow[]>`
      WITH due AS (
        SELECT o.id FROM outbox o
        WHERE o.platform = ${this.platform} AND o.status IN ('pending', 'sending') AND o.next_attempt_at <= now()
          AND NOT EXISTS (
            SELECT 1 FROM outbox e
            WHERE e.session_id = o.session_id AND e.platform = o.platform AND e.id < o.id AND e.status IN ('pending', 'sending'))
        ORDER BY o.id
        LIMIT ${this.batchSize}::int
        FOR UPDATE SKIP LOCKED)
      UPDATE outbox SET status = 'sending', attempts = outbox.attempts + 1,
        next_attempt_at = now() + make_interval(secs => ${leaseSeconds}::double precision)
      FROM due WHERE outbox.id = due.id
      RETURNING outbox.id, outbox.idempotency_key, outbox.session_id, outbox.operation, outbox.payload,
        outbox.target_key, outbox.attempts,
        (SELECT t.platform_message_id FROM outbox t WHERE t.idempotency_key = outbox.target_key) AS target_message_id,
        (SELECT t.status FROM outbox t WHERE t.idempotency_key = outbox.target_key) AS target_status`;
  }

  private async send(row: ClaimedRow): Promise<void> {
    const fields = { key: row.idempotency_key, operation: row.operation, attempt: row.attempts };
    if (row.target_key !== null && row.target_message_id === null) {
      if (row.target_status === 'pending' || row.target_status === 'sending') return this.retry(row, this.baseBackoffMs, 'target not sent yet');
      return this.fail(row, `target ${row.target_key} was never sent`);
    }
    try {
      const result = await this.deliver({
        id: row.id,
        idempotencyKey: row.idempotency_key,
        sessionId: row.session_id,
        operation: row.operation,
        payload: row.payload,
        targetKey: row.target_key,
        targetMessageId: row.target_message_id,
        attempt: row.attempts,
      });
      await this.prisma.$executeRaw`
        UPDATE outbox SET status = 'sent', sent_at = now(), platform_message_id = ${result.platformMessageId ?? null}, last_error = NULL
        WHERE id = ${row.id}`;
      this.log.debug(fields, 'outbox-sent');
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof PermanentPlatformError || row.attempts >= this.maxAttempts) return this.fail(row, message);
      const retryAfter = error instanceof PlatformError ? error.retryAfterMs : undefined;
      const delay = retryAfter ?? Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** (row.attempts - 1));
      this.log.warn({ ...fields, err: message, retryInMs: delay }, 'outbox-send-failed');
      await this.retry(row, delay, message);
    }
  }

  private async retry(row: ClaimedRow, delayMs: number, reason: string): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE outbox SET status = 'pending', last_error = ${reason},
        next_attempt_at = now() + make_interval(secs => ${delayMs / 1000}::double precision)
      WHERE id = ${row.id}`;
  }

  private async fail(row: ClaimedRow, reason: string): Promise<void> {
    this.log.error({ key: row.idempotency_key, operation: row.operation, err: reason }, 'outbox-item-failed');
    await this.prisma.$executeRaw`UPDATE outbox SET status = 'failed', last_error = ${reason} WHERE id = ${row.id}`;
  }
}
