// People's remember / forget waiting for their summarizer runs. The store is the truth (a request
// said to any process is stored pending, ReviewStore.request): whichever process drives the
// session reads the pending ones when told of new ones, and serves them one per fork, oldest first.
import type { PersonRequest, ReviewStore } from '../store.js';

export class PersonRequests {
  private readonly queue: PersonRequest[] = [];
  /** The store may hold requests this queue does not (a new runner, a wake-up, a handed-back run). */
  private stale = true;

  constructor(
    private readonly reviews: Pick<ReviewStore, 'pendingRequests'>,
    private readonly sessionId: string,
  ) {}

  /** True when a request waits here, or the store may hold one not read yet. */
  get mayWait(): boolean {
    return this.queue.length > 0 || this.stale;
  }

  /** True when a request waits here. */
  get waiting(): boolean {
    return this.queue.length > 0;
  }

  /** A request may have been stored (or handed back) since the store was last read. */
  noteStored(): void {
    this.stale = true;
  }

  /**
   * Another process may have driven the session meanwhile (and carried out what waits here):
   * only the store says what is still pending.
   */
  forget(): void {
    this.queue.length = 0;
    this.stale = true;
  }

  /**
   * Reads the pending requests when the store may hold new ones; `taken` are those runs of this
   * process already carry (their taking may not be stored yet).
   */
  async load(taken: ReadonlySet<number>): Promise<void> {
    if (!this.stale) return;
    this.stale = false;
    try {
      const pending = await this.reviews.pendingRequests(this.sessionId);
      const queued = new Set(this.queue.map((request) => request.eventId));
      for (const request of pending) {
        if (request.eventId !== undefined && !queued.has(request.eventId) && !taken.has(request.eventId)) this.queue.push(request);
      }
    } catch (error) {
      this.stale = true;
      throw error;
    }
  }

  /** Queues a request that is not stored (it is carried out only by this process). */
  push(request: PersonRequest): void {
    this.queue.push(request);
  }

  /** The oldest waiting request, taken off the queue. */
  shift(): PersonRequest | undefined {
    return this.queue.shift();
  }
}
