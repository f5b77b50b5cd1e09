// One heartbeat per process for the leases its sessions hold: every third of the TTL, one statement
// renews them all (thousands of live sessions would otherwise send thousands of renewals).
import type { Log } from '../log.js';
import type { LeaseStore } from '../store.js';

/** A lease held by one session's keeper, as the heartbeat sees it. */
export interface HeldLease {
  readonly sessionId: string;
  /** The token held now (null: given up since it joined). */
  readonly token: number | null;
  /**
   * The lease was renewed with `token` by a statement sent at `sentAt` (the keeper's monotonic
   * clock, ms), held for `validForMs` from when it ran (the database's clock).
   */
  renewedAt(token: number, sentAt: number, validForMs: number): void;
  /** The renewal found the lease taken by another replica. */
  takenAway(token: number): void;
}

/**
 * Milliseconds on a clock that never steps (not the wall clock: an NTP correction or an operator
 * setting the time must not stretch what a holder believes it holds).
 */
export function monotonicNow(): number {
  return performance.now();
}

export class LeaseHeartbeat {
  private readonly held = new Set<HeldLease>();
  private timer: NodeJS.Timeout | undefined;
  private beating = false;

  constructor(
    private readonly store: LeaseStore,
    private readonly owner: string,
    private readonly ttlMs: number,
    private readonly log: Log,
  ) {}

  /** Renews `lease` at every beat until it leaves. */
  join(lease: HeldLease): void {
    this.held.add(lease);
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), Math.max(50, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  leave(lease: HeldLease): void {
    this.held.delete(lease);
    if (this.held.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async beat(): Promise<void> {
    // A beat still waiting for the database is not doubled: the next one renews what it missed.
    if (this.beating) return;
    const due = [...this.held].flatMap((lease) => (lease.token === null ? [] : [{ lease, token: lease.token }]));
    if (due.length === 0) return;
    this.beating = true;
    const sentAt = monotonicNow();
    try {
      const renewed = await this.store.renewAll(this.owner, due.map(({ lease, token }) => ({ sessionId: lease.sessionId, fencingToken: token })), this.ttlMs);
      for (const { lease, token } of due) {
        const validForMs = renewed.get(lease.sessionId);
        if (validForMs === undefined) lease.takenAway(token);
        else lease.renewedAt(token, sentAt, validForMs);
      }
    } catch (error) {
      // A database hiccup is not a lost lease; the next beat tries again (and claims meanwhile
      // ask the database, as the renewal did not extend what the keepers know).
      this.log.warn({ leases: due.length, err: String(error) }, 'lease-renew-failed');
    } finally {
      this.beating = false;
    }
  }
}
