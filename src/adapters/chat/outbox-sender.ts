// The outbox's sender: one per platform and process. It claims due items (one driver per item
// across replicas), sends them in order per session through the platform's deliver function,
// retries honouring Retry-After, records platform message ids, and cleans up old rows.
import { PlatformError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import type { OutboxClaim, OutboxStore } from '../storage/outbox-store.js';

/** A claimed item as the deliver function sees it. */
export interface OutboxDelivery extends Omit<OutboxClaim, 'attempts' | 'targetStatus'> {
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
  /** Items claimed per round; at most one per session (default 50). */
  batchSize?: number;
  /** Sent and superseded items are deleted after this long (default 14 days). */
  retentionMs?: number;
  /**
   * Operations whose target may be missing (never stored, superseded, or failed): they are
   * delivered with targetMessageId null and the deliver function decides (a final answer with no
   * streamed message to replace is posted). Others fail when their target was never sent.
   */
  optionalTargetOperations?: readonly string[];
}

/** A delivered item, to be marked sent with its round. */
interface Sent {
  id: bigint;
  platformMessageId: string | null;
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
  private readonly optionalTarget: ReadonlySet<string>;
  private lastCleanupAt = 0;

  constructor(
    private readonly store: OutboxStore,
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
    this.batchSize = options.batchSize ?? 50;
    this.retentionMs = options.retentionMs ?? 14 * 24 * 3_600_000;
    this.optionalTarget = new Set(options.optionalTargetOperations ?? []);
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
    if (claimed.length === 0) return 0;
    const outcomes = await Promise.allSettled(claimed.map((row) => this.send(row)));
    const sent: Sent[] = [];
    for (const outcome of outcomes) {
      // A failure to record a retry leaves the claim to lapse; it must not lose the round's sends.
      if (outcome.status === 'rejected') this.log.error({ err: outcome.reason, platform: this.platform }, 'outbox-record-failed');
      else if (outcome.value !== null) sent.push(outcome.value);
    }
    // One statement marks the whole round sent (a crash before it re-sends the round; posts find
    // themselves by their key, reactions are idempotent).
    if (sent.length > 0) await this.store.markSent(sent);
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
      const deleted = await this.store.deleteDelivered(this.platform, this.retentionMs);
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

  /** Claims the due head item of each session (see OutboxStore.claimDue). */
  private claim(): Promise<OutboxClaim[]> {
    return this.store.claimDue(this.platform, { leaseMs: this.leaseMs, batchSize: this.batchSize });
  }

  /** Delivers one item; returns what to record when it was sent (failures are recorded here). */
  private async send(row: OutboxClaim): Promise<Sent | null> {
    const fields = { key: row.idempotencyKey, operation: row.operation, attempt: row.attempts };
    if (row.targetKey !== null && row.targetMessageId === null) {
      if (row.targetStatus === 'pending' || row.targetStatus === 'sending') {
        await this.retry(row, this.baseBackoffMs, 'target not sent yet');
        return null;
      }
      if (!this.optionalTarget.has(row.operation)) {
        await this.fail(row, `target ${row.targetKey} was never sent`);
        return null;
      }
    }
    try {
      const result = await this.deliver({
        id: row.id,
        idempotencyKey: row.idempotencyKey,
        sessionId: row.sessionId,
        operation: row.operation,
        payload: row.payload,
        targetKey: row.targetKey,
        targetMessageId: row.targetMessageId,
        attempt: row.attempts,
      });
      this.log.debug(fields, 'outbox-sent');
      return { id: row.id, platformMessageId: result.platformMessageId ?? null };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof PermanentPlatformError || row.attempts >= this.maxAttempts) {
        await this.fail(row, message);
        return null;
      }
      const retryAfter = error instanceof PlatformError ? error.retryAfterMs : undefined;
      const delay = retryAfter ?? Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** (row.attempts - 1));
      this.log.warn({ ...fields, err: message, retryInMs: delay }, 'outbox-send-failed');
      await this.retry(row, delay, message);
      return null;
    }
  }

  private retry(row: OutboxClaim, delayMs: number, reason: string): Promise<void> {
    return this.store.retryLater(row.id, delayMs, reason);
  }

  private async fail(row: OutboxClaim, reason: string): Promise<void> {
    this.log.error({ key: row.idempotencyKey, operation: row.operation, err: reason }, 'outbox-item-failed');
    await this.store.markFailed(row.id, reason);
  }
}
