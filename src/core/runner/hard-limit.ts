// R19: the context never outgrows the window. When the worker's next call reaches the hard limit
// and no reset is pending, the system asks for the reset itself, as if the decider had said reset
// (R6 then applies); when the provider refuses a call as longer than its window (smaller than
// MODEL_CONTEXT_WINDOW), the session resets and the call is tried once more after the reset.
import type { AgentDeps } from '../agent-context.js';
import type { ContextTooLongError } from '../errors.js';
import type { LiveContext } from '../loop/live-context.js';
import type { SessionRecord } from '../store.js';
import type { ResetReason } from './reset-requests.js';

/** What the hard limit needs of its runner. */
export interface HardLimitScope {
  deps: Pick<AgentDeps, 'settings' | 'log'>;
  context: LiveContext;
  session(): SessionRecord;
  /** Asks for a reset of `segmentId` with the system's reason; true when it is pending. Never rejects. */
  requestReset(segmentId: string, reason: ResetReason): Promise<boolean>;
}

export class HardLimit {
  /**
   * A segment that started at or above the hard limit (a tiny window: the init messages fill it):
   * another forced reset could not make it smaller, so none is asked for in it (no reset loop).
   */
  private fullAtStart: string | null = null;
  /** The provider refused the worker's call as too long and a reset has been tried for it (once). */
  private tooLongRetried = false;

  constructor(private readonly scope: HardLimitScope) {}

  /** True when `tokens` for the next worker call reach the hard limit (measured as R2 measures it). */
  reached(tokens: number): boolean {
    const { settings } = this.scope.deps;
    return tokens * 100 >= settings.hardLimitPercent * settings.contextWindow;
  }

  /** At the hard limit with no reset pending, asks for the reset. */
  async resetIfFull(): Promise<void> {
    const { context } = this.scope;
    const tokens = context.nextCallTokens();
    if (this.scope.session().resetRequested || !this.reached(tokens) || this.fullAtStart === context.segment.id) return;
    this.scope.deps.log.warn({ sessionId: this.scope.session().id, tokens }, 'context-full');
    await this.scope.requestReset(context.segment.id, 'context-full');
  }

  /** Whether a call refused as too long may get a reset and a retry (not twice in a row). */
  get mayRetryTooLong(): boolean {
    return !this.tooLongRetried;
  }

  /**
   * The provider refused the worker's call as too long: a reset is asked for, and the call is tried
   * again after it. False when no reset could be asked for (the error then fails the drive).
   */
  async resetForTooLong(error: ContextTooLongError): Promise<boolean> {
    this.tooLongRetried = true;
    this.scope.deps.log.warn({ sessionId: this.scope.session().id, err: error.message }, 'context-too-long-reset');
    if (this.scope.session().resetRequested) return true;
    return this.scope.requestReset(this.scope.context.segment.id, 'context-full');
  }

  /** The provider took a call, or a person acted: a later refusal gets its own retry. */
  callTaken(): void {
    this.tooLongRetried = false;
  }

  /** A reset gave the context a new segment of `tokensAfter`; one at the limit already is left alone. */
  segmentStarted(tokensAfter: number): void {
    if (this.reached(tokensAfter)) this.fullAtStart = this.scope.context.segment.id;
  }
}
