// Runs async work one at a time per key (a channel, a session, a message) and concurrently across
// keys, so a thread's messages are handled, and a session's posts enqueued, in the order they
// arrived. The one per-key queue of both chat adapters.

const settled = () => undefined;

/** A per-key chain of promises; a failure never blocks the key. */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  /** `onError` hears the failures of work queued with `post`. */
  constructor(private readonly onError: (error: unknown, key: string) => void = settled) {}

  /** Queues `work` after everything queued before under `key`; settles as the work does. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const current = (this.tails.get(key) ?? Promise.resolve()).then(work);
    const tail = current.then(settled, settled);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return current;
  }

  /** Queues `work` whose failure goes to `onError`; resolves when it has run. */
  post(key: string, work: () => Promise<void>): Promise<void> {
    return this.run(key, work).catch((error: unknown) => this.onError(error, key));
  }

  /** Resolves when everything queued so far (under any key) has run. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}
