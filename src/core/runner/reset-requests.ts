// R6/R8: asking for a reset. The session's row decides: a request for a segment the session has
// left (a stale decider, whatever this replica's copy says), or one made while a reset is pending,
// is ignored. A decided reset is stored durably, retried while the database is away, and the lease
// holder is told; it never rejects.
import type { AgentDeps } from '../agent-context.js';
import { retryTransient } from '../retry.js';
import type { SessionMirror } from './session-mirror.js';

/** Why the system itself asked for a reset (R19: the note says so). */
export type ResetReason = 'context-full';

/** How long a decided reset is retried while the database is away before it is given up (ms). */
const resetRequestBudgetMs = 10 * 60_000;

/** What asking needs of the runner. */
export interface ResetRequestScope {
  deps: Pick<AgentDeps, 'stores' | 'replica' | 'log'>;
  mirror: SessionMirror;
  /** The segment the runner's context is in. */
  segmentId(): string;
  /** True once the runner stopped taking work (shutdown): nothing more is stored. */
  stopped(): boolean;
  /** True while this replica holds the session's lease (then it carries the reset out itself). */
  holdsLease(): boolean;
  /** A reset is pending now: the runner looks for its next activity. */
  stored(): void;
  /** Aborted when the session shuts down. */
  signal: AbortSignal;
}

export class ResetRequests {
  /**
   * Why the pending reset of `segmentId` was asked for by the system, not a decider or a person.
   * Set when this runner stores a request: a reset of another segment (the request was carried
   * out elsewhere, or failed and a later one came) is not labelled by it.
   */
  private reason: { segmentId: string; reason: ResetReason } | null = null;

  constructor(private readonly scope: ResetRequestScope) {}

  /** Asks for a reset of `segmentId` (null: whichever is current, a person's reset); true when it is now pending. */
  async request(segmentId: string | null, reason: ResetReason | null): Promise<boolean> {
    const { deps, mirror } = this.scope;
    const sessionId = mirror.record.id;
    let stored: boolean;
    try {
      stored = await retryTransient(() => this.store(segmentId, reason), {
        budgetMs: resetRequestBudgetMs,
        signal: this.scope.signal,
        onRetry: (error, attempt, waitMs) => deps.log.warn({ sessionId, attempt, waitMs, err: String(error) }, 'reset-request-retry'),
      });
    } catch (error) {
      deps.log.error({ sessionId, segmentId, err: String(error) }, 'reset-request-failed');
      return false;
    }
    // The replica holding the lease carries it out: this one, or another that hears it now.
    if (stored && !this.scope.holdsLease()) await deps.replica.wakeups.notify(sessionId, 'flags').catch((error: unknown) => deps.log.warn({ sessionId, err: String(error) }, 'reset-notify-failed'));
    return stored;
  }

  /** The system's reason for the reset of `segmentId`, if this runner asked for it with one. */
  reasonFor(segmentId: string): ResetReason | null {
    return this.reason?.segmentId === segmentId ? this.reason.reason : null;
  }

  /** The pending reset was carried out (here or elsewhere). */
  done(): void {
    this.reason = null;
  }

  private async store(segmentId: string | null, reason: ResetReason | null): Promise<boolean> {
    const { deps, mirror } = this.scope;
    if (this.scope.stopped() || !(await deps.stores.sessions.requestReset(mirror.record.id, segmentId))) {
      deps.log.info({ sessionId: mirror.record.id, segmentId }, 'reset-request-ignored');
      // The row differs from this copy (a pending reset, another segment): read it again.
      mirror.stale = true;
      return false;
    }
    // This request is the pending one now: its reason (or none) replaces any earlier one.
    this.reason = reason ? { segmentId: segmentId ?? this.scope.segmentId(), reason } : null;
    mirror.change({ resetRequested: true });
    this.scope.stored();
    return true;
  }
}
