// Back-off for work that failed on a transient storage error (R18, docs/product.md
// "Database errors are survived"): every retry waits, growing to a cap, so no loop is ever tight.
import { isTransient } from './errors.js';

/** Delay before attempt `attempt` (1 = the first retry): base · 2^(attempt−1), capped, ±25 % jitter. */
export function backoffMs(attempt: number, baseMs = 250, maxMs = 5_000): number {
  const plain = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(plain * (0.75 + Math.random() * 0.5));
}

/** Waits `ms`, or less when `signal` aborts (then it rejects with the abort reason). */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

export interface RetryOptions {
  /** Gives up after this long in total (ms); the last error is thrown. */
  budgetMs: number;
  signal?: AbortSignal;
  /** Called before each wait, e.g. to log. */
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
}

/** Runs `work`, retrying transient storage failures with back-off within `budgetMs`. */
export async function retryTransient<T>(work: () => Promise<T>, options: RetryOptions): Promise<T> {
  const deadline = Date.now() + options.budgetMs;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const wait = backoffMs(attempt);
      if (!isTransient(error) || Date.now() + wait > deadline || options.signal?.aborted) throw error;
      options.onRetry?.(error, attempt, wait);
      await delay(wait, options.signal);
    }
  }
}
