// Rendering writes to the outbox in Postgres: while the database is away (a failover, a restart)
// that write is retried with back-off, so an answer or a note is delayed, never dropped.
import { isTransient } from '../../core/errors.js';
import { backoffMs, delay } from '../../core/retry.js';
import type { Logger } from '../../log.js';
import { isTransientDatabaseError } from '../storage/storage-errors.js';

/** How long one render keeps trying while the database is away (ms). */
const renderBudgetMs = 10 * 60_000;

/** Runs `work`, repeating it after transient database failures (its writes are idempotent by key). */
export async function untilStored<T>(work: () => Promise<T>, log: Logger, fields: object): Promise<T> {
  const deadline = Date.now() + renderBudgetMs;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      if (!(isTransient(error) || isTransientDatabaseError(error)) || Date.now() > deadline) throw error;
      const wait = backoffMs(attempt, 500, 5_000);
      log.warn({ ...fields, attempt, retryInMs: wait, err: String(error) }, 'render-store-retry');
      await delay(wait);
    }
  }
}
