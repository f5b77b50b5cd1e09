// 👀 → ✅ on the Slack messages people steer with, for SlackRenderer: a queued steer gets 👀 after a
// moment unless a worker takes it sooner, and a taken one gets ✅ with its 👀 removed. Writes go
// through the renderer's per-session queue, so reactions keep event order with cards and answers.
import type { SessionRecord, SteerRecord } from '../../core/store.js';
import type { Outbox, OutboxEntry } from '../chat/outbox.js';
import { parseSlackMessageKey } from './context.js';
import type { Json } from './message-views.js';

/**
 * How long a steer waits before it gets 👀 (ms): most are taken sooner, and then ✅ alone is one
 * reaction instead of three.
 */
const eyesDelayMs = 1_000;

/** What the reactions need from the renderer. */
export interface SteerReactionsContext {
  outbox: Pick<Outbox, 'enqueue' | 'enqueueAll'>;
  /** An outbox item of the session (the renderer's, with the workspace the sender needs). */
  entry(session: SessionRecord, key: string, operation: string, payload: { [key: string]: Json }): OutboxEntry;
  /** Runs `work` after everything already queued for the session. */
  queue(sessionId: string, work: () => Promise<void>): void;
}

export class SteerReactions {
  /** Steers taken by a worker before their steer-received was rendered: no 👀 for them. */
  private readonly takenAhead = new Set<string>();
  /** Steers whose 👀 was skipped: their ✅ needs no removal of 👀. */
  private readonly eyesSkipped = new Set<string>();
  /** Steers waiting for their 👀 (eyesDelayMs), by message key. */
  private readonly eyesDue = new Map<string, { session: SessionRecord; steer: SteerRecord; timer: NodeJS.Timeout }>();

  constructor(private readonly context: SteerReactionsContext) {}

  /** Runs when a worker takes a steer, before the event renders: a 👀 still due is dropped. */
  takenSeen(key: string): void {
    this.takenAhead.add(key);
    const due = this.eyesDue.get(key);
    if (!due) return;
    clearTimeout(due.timer);
    this.eyesDue.delete(key);
    this.eyesSkipped.add(key);
  }

  /** A queued steer gets 👀 after eyesDelayMs, unless a worker takes it first. */
  received(session: SessionRecord, steer: SteerRecord): void {
    const key = steer.platformMessageKey;
    if (this.takenAhead.has(key)) {
      this.eyesSkipped.add(key);
      return;
    }
    const timer = setTimeout(() => {
      this.eyesDue.delete(key);
      this.context.queue(session.id, () => this.eyes(session, steer));
    }, eyesDelayMs);
    timer.unref();
    this.eyesDue.set(key, { session, steer, timer });
  }

  /** Queues every 👀 still waiting for its delay now (the renderer settles). */
  flush(): void {
    for (const [key, due] of this.eyesDue) {
      clearTimeout(due.timer);
      this.eyesDue.delete(key);
      this.context.queue(due.session.id, () => this.eyes(due.session, due.steer));
    }
  }

  /**
   * ✅ on taken steers and 👀 removed, in one statement. The removal cancels a 👀 still waiting in
   * the outbox (neither is sent); a 👀 queued by another replica or before a restart is removed.
   */
  async taken(session: SessionRecord, steers: SteerRecord[]): Promise<void> {
    const entries: OutboxEntry[] = [];
    for (const steer of steers) {
      const key = steer.platformMessageKey;
      this.takenAhead.delete(key);
      const check = this.reaction(session, steer, 'react', 'white_check_mark');
      if (check) entries.push(check);
      if (this.eyesSkipped.delete(key)) continue;
      const unreact = this.reaction(session, steer, 'unreact', 'eyes');
      if (unreact) entries.push({ ...unreact, cancels: reactionKey('react', key, 'eyes') });
    }
    await this.context.outbox.enqueueAll(entries);
  }

  /** 👀, stored only while the steer is still queued (another replica may have taken it). */
  private async eyes(session: SessionRecord, steer: SteerRecord): Promise<void> {
    const key = steer.platformMessageKey;
    if (this.takenAhead.has(key)) {
      this.eyesSkipped.add(key);
      return;
    }
    const eyes = this.reaction(session, steer, 'react', 'eyes');
    if (eyes) await this.context.outbox.enqueue({ ...eyes, whileSteerQueued: key });
  }

  /** A reaction on the steer's Slack message, or null for a steer from elsewhere. */
  private reaction(session: SessionRecord, steer: SteerRecord, operation: 'react' | 'unreact', name: string): OutboxEntry | null {
    const message = parseSlackMessageKey(steer.platformMessageKey);
    if (!message) return null;
    return this.context.entry(session, reactionKey(operation, steer.platformMessageKey, name), operation, { channel: message.channelId, timestamp: message.ts, name });
  }
}

/** The outbox key of a reaction: one per message, operation and emoji. */
function reactionKey(operation: 'react' | 'unreact', messageKey: string, name: string): string {
  const label = name === 'white_check_mark' ? 'check' : name;
  return `${operation}:${messageKey}:${label}`;
}
