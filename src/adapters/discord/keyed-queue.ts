// Runs async work one at a time per key (a channel, a session) and concurrently across keys, so a
// thread's messages are handled, and a session's posts enqueued, in the order they arrived.

/** A per-key chain of promises. Errors go to `onError`; they never block the key. */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly onError: (error: unknown, key: string) => void) {}

  /** Queues `work` after everything queued before under `key`; resolves when it has run. */
  run(key: string, work: () => Promise<void>): Promise<void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => this.onError(error, key));
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves when everything queued so far (under any key) has run. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}
