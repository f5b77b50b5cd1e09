// How many session runners do database and CPU work at once in this process. A runner holds a
// slot while it orchestrates and gives it back while it waits on a model or a tool, so a burst
// of busy sessions queues here (first come, first served) instead of flooding the event loop and
// the connection pool, while sessions that wait on slow models cost no slot.
import { ConfigError } from '../errors.js';

export class WorkSlots {
  private held = 0;
  private readonly queue: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new ConfigError(`work slots: size must be a positive integer, got ${size}`);
  }

  async acquire(): Promise<void> {
    if (this.held < this.size) {
      this.held += 1;
      return;
    }
    // release() hands its slot straight to the first waiter: `held` stays the same.
    await new Promise<void>((resolve) => this.queue.push(resolve));
  }

  release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.held -= 1;
  }

  /** Runs `work` holding a slot. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /** Gives the held slot back while `wait` runs (a model call, a tool), then takes one again. */
  async outside<T>(wait: () => Promise<T>): Promise<T> {
    this.release();
    try {
      return await wait();
    } finally {
      await this.acquire();
    }
  }

  /** Runners waiting for a slot (metrics, tests). */
  get waiting(): number {
    return this.queue.length;
  }
}
