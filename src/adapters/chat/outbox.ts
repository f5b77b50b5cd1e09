// The durable outbox (docs/product.md "Promises"): every platform write is stored with an
// idempotency key before it is sent, so a crash or a platform outage loses nothing and a repeated
// event enqueues nothing new. A sender per platform (outbox-sender.ts) sends them; the platform
// message ids it records let later edits and reactions name their target by key.
import { storableJson } from '../../core/text-hygiene.js';
import type { Logger } from '../../log.js';
import type { OutboxPayload, OutboxStore } from '../storage/outbox-store.js';
import { isTransientDatabaseError } from '../storage/storage-errors.js';
import { WriteBatch } from '../storage/write-batch.js';
import { OutboxSender, type Deliver, type SenderOptions } from './outbox-sender.js';

/** A write to enqueue. */
export interface OutboxEntry {
  /** Unique per intended write, e.g. "answer:<segmentId>:<seq>:<part>"; a repeat is a no-op. */
  idempotencyKey: string;
  sessionId: string | null;
  platform: string;
  /** Interpreted by the platform's deliver function (post, update, react, …). */
  operation: string;
  payload: OutboxPayload;
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

/** The outbox, and the senders that drain it. */
export class Outbox {
  private readonly senders = new Map<string, OutboxSender>();
  /**
   * A batchable write's outcome: stored (true) or skipped. Writes enqueued while a batch is being
   * stored go together in the next statement (the 👀 of a burst of steers: storage/write-batch.ts).
   */
  private readonly batch = new WriteBatch<OutboxEntry, boolean>(async (entries) => {
    const stored = new Set(await this.insertAll(entries));
    return entries.map((entry) => stored.has(entry.idempotencyKey));
  }, { maxInFlight: 1, maxBatch: 200, keyOf: (entry) => entry.idempotencyKey, splitAfter: (error) => !isTransientDatabaseError(error) });

  constructor(
    private readonly store: OutboxStore,
    private readonly log: Logger,
  ) {}

  /**
   * Stores the write unless its key exists or its fencing token is stale; wakes the local sender.
   * `inserted` false = a duplicate, or (with `fenced`) a write of a replica that lost its lease.
   */
  async enqueue(entry: OutboxEntry): Promise<{ inserted: boolean; fenced?: boolean }> {
    if (batchable(entry)) return { inserted: await this.batch.add(entry) };
    const targetKey = entry.targetKey ?? null;
    const fencingToken = entry.fencingToken ?? null;
    const { inserted, fenced } = await this.store.insert({
      idempotencyKey: entry.idempotencyKey,
      sessionId: entry.sessionId,
      platform: entry.platform,
      operation: entry.operation,
      // jsonb cannot hold NUL (a model may echo one from a page): it is replaced, the post goes out.
      payload: storableJson(entry.payload),
      targetKey,
      fencingToken,
      // A card shows its latest state only: older unsent edits of the same target are superseded.
      supersededOperations: targetKey === null ? [] : [...(entry.replacesPending ? [entry.operation] : []), ...(entry.supersedes ?? [])],
      supersedesTarget: targetKey !== null && entry.supersedesUntriedTarget === true,
      whileSteerQueued: entry.whileSteerQueued ?? null,
    });
    if (fenced) {
      this.log.warn({ key: entry.idempotencyKey, fencingToken: String(fencingToken) }, 'outbox-write-fenced');
      return { inserted: false, fenced: true };
    }
    if (inserted) this.senders.get(entry.platform)?.wake();
    return { inserted };
  }

  /**
   * Stores several writes in one statement, in the given order (keys that exist are skipped);
   * honours `cancels` and `whileSteerQueued` (no fencing, replacesPending or supersedes). Returns how
   * many were stored.
   */
  async enqueueAll(entries: readonly OutboxEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    if (entries.some(needsOwnStatement)) throw new Error('enqueueAll takes no fencing token, replacesPending or supersedes: use enqueue');
    return (await this.insertAll(entries)).length;
  }

  /** One statement for `entries`; wakes the senders of what it stored. Returns the keys stored. */
  private async insertAll(entries: readonly OutboxEntry[]): Promise<string[]> {
    const stored = await this.store.insertAll(
      entries.map((entry) => ({
        idempotencyKey: entry.idempotencyKey,
        sessionId: entry.sessionId,
        platform: entry.platform,
        operation: entry.operation,
        payload: storableJson(entry.payload),
        targetKey: entry.targetKey ?? null,
        cancels: entry.cancels ?? null,
        whileSteerQueued: entry.whileSteerQueued ?? null,
      })),
    );
    if (stored.length > 0) {
      const keys = new Set(stored);
      for (const platform of new Set(entries.filter((entry) => keys.has(entry.idempotencyKey)).map((entry) => entry.platform))) this.senders.get(platform)?.wake();
    }
    return stored;
  }

  /** The platform message id of a sent item, or null. */
  messageIdOf(idempotencyKey: string): Promise<string | null> {
    return this.store.messageIdOf(idempotencyKey);
  }

  /** Starts the sender of a platform (one per platform and process). */
  startSender(platform: string, deliver: Deliver, options: SenderOptions = {}): OutboxSender {
    const sender = new OutboxSender(this.store, platform, deliver, options, this.log);
    this.senders.set(platform, sender);
    sender.start();
    return sender;
  }
}

/** A write with a fencing token or one that supersedes others: stored by a statement of its own. */
function needsOwnStatement(entry: OutboxEntry): boolean {
  return entry.fencingToken !== undefined || entry.replacesPending === true || entry.supersedes !== undefined || entry.supersedesUntriedTarget === true;
}

/** A write the batch takes: any other, except one that cancels (only enqueueAll honours `cancels`). */
function batchable(entry: OutboxEntry): boolean {
  return !needsOwnStatement(entry) && entry.cancels === undefined;
}
