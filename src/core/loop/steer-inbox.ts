// The steer messages waiting for a session's worker (R9). The queue itself is durable, in the
// store; the inbox knows when it may hold something, so a worker passing a checkpoint asks the
// store only then instead of at every step.
import { withoutRepeatedImages } from './attachments.js';
import type { SavedAttachment } from '../attachment-saver.js';
import { imageUrls } from './image-budget.js';
import type { LiveContext } from './live-context.js';
import type { ChatMessage } from '../messages.js';
import type { SteerRecord } from '../store.js';

/** Saves the attachments of steers about to be taken; by steer id. */
export type SaveAttachments = (steers: SteerRecord[]) => Promise<Map<number, SavedAttachment[]>>;

export class SteerInbox {
  private maybeQueued = true;
  /** Bumped by every arrival, so a look that raced one does not conclude the queue is empty. */
  private arrivals = 0;

  constructor(
    private readonly context: LiveContext,
    private readonly sessionId: string,
    /** Renders a steer with what became of its attachments (null: nothing could save them). */
    private readonly render: (steer: SteerRecord, saved: SavedAttachment[] | null) => ChatMessage,
    /** Saves attachments into the workspace before they are named in the context (absent: not saved). */
    private readonly save?: SaveAttachments,
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
    let saved = new Map<number, SavedAttachment[]>();
    const save = this.save;
    // Files are fetched after the look and before the render, so the message names where they are.
    const prepare = save
      ? async (steers: SteerRecord[]) => {
          const withFiles = steers.filter((steer) => steer.attachments.length > 0);
          if (withFiles.length > 0) saved = withoutRepeatedImages(await save(withFiles), imageUrls(this.context.messages));
        }
      : undefined;
    const render = (steer: SteerRecord) => this.render(steer, steer.attachments.length === 0 ? [] : (saved.get(steer.id) ?? null));
    const taken = await this.context.takeSteers(this.sessionId, render, prepare);
    // Every steer stored before the look began was taken; one stored since signals again.
    if (this.arrivals === arrivalsBefore) this.maybeQueued = false;
    return taken;
  }
}
