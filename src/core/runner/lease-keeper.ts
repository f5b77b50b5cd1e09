// Holds a session's lease while its runner works (R10 across replicas): claims it before each
// activity, renews it with the process's heartbeat, releases it at idle, and notices when it was
// lost. A claim while the lease is held and freshly renewed costs no statement.
import type { Log } from '../log.js';
import type { LeaseStore } from '../store.js';
import { LeaseHeartbeat, monotonicNow, type HeldLease } from './lease-heartbeat.js';

export type Claim =
  /** Held all along (renewed recently): nothing could have changed; no statement was needed. */
  | 'held'
  /** Ours, and nobody else held it since we last did: our in-memory state is current. */
  | 'kept'
  /** Ours, but another replica may have written in between: reload before working. */
  | 'changed-hands'
  /** Another replica holds it: it drives the session. */
  | 'refused';

export class LeaseKeeper implements HeldLease {
  /** The fencing token while held; null otherwise. */
  token: number | null = null;
  /** Set when a renewal found the lease taken; the runner stops at its next checkpoint. */
  lost = false;
  private releasedToken: number | null = null;
  /**
   * Until when (monotonicNow() ms) the last acquire or renewal holds the lease: the time its
   * statement was sent plus what the database said is left of it on its own clock, so neither a
   * skew between the two clocks nor a step of the wall clock can make two holders.
   */
  private heldUntil = 0;
  private stale = false;
  private releaseTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: LeaseStore,
    readonly sessionId: string,
    private readonly owner: string,
    private readonly ttlMs: number,
    private readonly log: Log,
    /** False in a process that never drives (HIPPO_ROLE=ingest): every claim is refused. */
    private readonly drives = true,
    /** The process's heartbeat, shared by its sessions (one renewal statement per beat). */
    private readonly heartbeat = new LeaseHeartbeat(store, owner, ttlMs, log),
  ) {}

  async claim(): Promise<Claim> {
    if (!this.drives) return 'refused';
    // A third of the TTL to spare: another replica can take the lease only after it expired.
    if (this.token !== null && !this.lost && !this.stale && monotonicNow() < this.heldUntil - this.ttlMs / 3) return 'held';
    const sentAt = monotonicNow();
    const lease = await this.store.acquire(this.sessionId, this.owner, this.ttlMs);
    if (!lease) return 'refused';
    this.heldUntil = sentAt + Math.min(lease.validForMs, this.ttlMs);
    // Tokens grow on every change of hands and stay when the same owner re-claims: getting back
    // the token we held or released means nobody else held it in between.
    // A first-ever holder (token 1 on a lease this keeper never held) follows nobody: no replica
    // can have written the session, as every write happens under the lease.
    const first = this.token === null && this.releasedToken === null && lease.fencingToken === 1;
    const continuous = !this.stale && (first || lease.fencingToken === this.token || lease.fencingToken === this.releasedToken);
    this.stale = false;
    this.token = lease.fencingToken;
    this.lost = false;
    this.startHeartbeat();
    return continuous ? 'kept' : 'changed-hands';
  }

  /** Another writer was seen: the next claim must reload, whatever its token says. */
  forget(): void {
    this.stale = true;
  }

  /**
   * Gives the lease up after `graceMs` (the next turn often follows at once, and then claims it
   * only once; work that begins calls cancelRelease), or at once when `graceMs` is 0, if
   * `mayRelease()` still says so then; `released` runs after.
   */
  releaseWhenIdle(graceMs: number, mayRelease: () => boolean, released: () => Promise<void>): void {
    this.cancelRelease();
    const release = () => {
      if (mayRelease()) void this.releaseIdle(released);
    };
    if (graceMs <= 0) return release();
    this.releaseTimer = setTimeout(release, graceMs);
    this.releaseTimer.unref();
  }

  /** Work began again: the lease stays. */
  cancelRelease(): void {
    clearTimeout(this.releaseTimer);
    this.releaseTimer = undefined;
  }

  private async releaseIdle(released: () => Promise<void>): Promise<void> {
    if (this.token === null) return;
    try {
      await this.release();
      await released();
    } catch (error) {
      this.log.warn({ sessionId: this.sessionId, err: String(error) }, 'lease-release-failed');
    }
  }

  async release(): Promise<void> {
    const token = this.token;
    this.stopHeartbeat();
    if (token === null) return;
    this.token = null;
    this.releasedToken = token;
    await this.store.release(this.sessionId, this.owner, token);
  }

  private startHeartbeat(): void {
    this.heartbeat.join(this);
  }

  private stopHeartbeat(): void {
    this.heartbeat.leave(this);
  }

  /** HeldLease: the process's heartbeat renewed the lease. */
  renewedAt(token: number, sentAt: number, validForMs: number): void {
    if (this.token === token) this.heldUntil = sentAt + Math.min(validForMs, this.ttlMs);
  }

  /** HeldLease: the renewal found the lease taken; the runner stops at its next checkpoint. */
  takenAway(token: number): void {
    if (this.token !== token) return;
    this.log.warn({ sessionId: this.sessionId, fencingToken: token }, 'lease-lost');
    this.lost = true;
    this.token = null;
    this.stopHeartbeat();
  }
}
