// The steer messages waiting for a session's worker (R9). The queue itself is durable, in the
// store; the inbox knows when it may hold something, so a worker passing a checkpoint asks the
// store only then instead of at every step.
import type { LiveContext } from './live-context.js';
import type { ChatMessage } from './messages.js';
import type { SteerRecord } from './store.js';

export class SteerInbox {
  private maybeQueued = true;
  /** Bumped by every arrival, so a look that raced one does not conclude the queue is empty. */
  private arrivals = 0;

  constructor(
    private readonly context: LiveContext,
    private readonly sessionId: string,
    private readonly render: (steer: SteerRecord) => ChatMessage,
  ) {}

  /** Steers may be queued: one was stored (on any replica), or nothing is known (a new lease). */
  arrived(): void {
    this.arrivals += 1;
    this.maybeQueued = true;
  }

  get mayHaveQueued(): boolean {
    return this.maybeQueued;
  }

  /** Moves the queued steers into the context when some may be queued; returns those taken. */
  async take(): Promise<SteerRecord[]> {
    if (!this.maybeQueued) return [];
    const arrivalsBefore = this.arrivals;
    const taken = await this.context.takeSteers(this.sessionId, this.render);
    // Every steer stored before the look began was taken; one stored since signals again.
    if (this.arrivals === arrivalsBefore) this.maybeQueued = false;
    return taken;
  }
}
