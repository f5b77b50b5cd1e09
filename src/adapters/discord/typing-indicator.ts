// Discord's "Hippo is typing…" lasts about 10 s, so it is renewed every ~8 s while a run works.
// Best effort: a failed typing call is logged and never retried through the outbox.
import type { Logger } from '../../log.js';

/** Keeps the typing indicator up in channels where a run is active. */
export class TypingIndicator {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly sendTyping: (channelId: string) => Promise<unknown>,
    private readonly log: Logger,
    /** How often the indicator is renewed, in milliseconds (default 8,000). */
    private readonly intervalMs = 8_000,
  ) {}

  /** Shows the indicator now and renews it until `stop` (a second start is a no-op). */
  start(channelId: string): void {
    if (this.timers.has(channelId)) return;
    const tick = () => {
      this.sendTyping(channelId).catch((error: unknown) => this.log.debug({ err: error, channelId }, 'discord-typing-failed'));
    };
    const timer = setInterval(tick, this.intervalMs);
    timer.unref();
    this.timers.set(channelId, timer);
    tick();
  }

  /** Stops renewing the indicator in a channel (Discord clears it within 10 s or at the next post). */
  stop(channelId: string): void {
    clearInterval(this.timers.get(channelId));
    this.timers.delete(channelId);
  }

  /** Channels with the indicator on. */
  get active(): string[] {
    return [...this.timers.keys()];
  }

  /** Stops every indicator (shutdown). */
  stopAll(): void {
    for (const channelId of [...this.timers.keys()]) this.stop(channelId);
  }
}
