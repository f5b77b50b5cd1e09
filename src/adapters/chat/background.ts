// Work that runs after a platform was answered (the 3-second ack): tracked so shutdown can wait
// for it, and logged when it fails instead of becoming an unhandled rejection.
import type { Logger } from '../../log.js';

/** Runs and tracks fire-and-forget tasks. */
export class Background {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly log: Logger) {}

  /** Starts `task` now; a failure is logged under `name` with `fields`. */
  run(name: string, task: () => Promise<unknown>, fields: object = {}): void {
    const tracked: Promise<void> = Promise.resolve()
      .then(task)
      .then(
        () => undefined,
        (error: unknown) => this.log.error({ ...fields, err: error }, `${name}-failed`),
      )
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /** Resolves when every task started so far (and any they started) has finished. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}
