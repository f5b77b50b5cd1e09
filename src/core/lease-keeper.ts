// Holds a session's lease while its runner works (R10 across replicas): claims it before each
// activity, renews it by heartbeat, releases it at idle, and notices when it was lost.
import type { Log } from './log.js';
import type { LeaseStore } from './store.js';

export type Claim =
  /** Ours, and nobody else held it since we last did: our in-memory state is current. */
  | 'kept'
  /** Ours, but another replica may have written in between: reload before working. */
  | 'changed-hands'
  /** Another replica holds it: it drives the session. */
  | 'refused';

export class LeaseKeeper {
  /** The fencing token while held; null otherwise. */
  token: number | null = null;
  /** Set when a renewal found the lease taken; the runner stops at its next checkpoint. */
  lost = false;
  private releasedToken: number | null = null;
  private stale = false;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly sessionId: string,
    private readonly owner: string,
    private readonly ttlMs: number,
    private readonly log: Log,
  ) {}

  async claim(): Promise<Claim> {
    const lease = await this.store.acquire(this.sessionId, this.owner, this.ttlMs);
    if (!lease) return 'refused';
    // Tokens grow on every change of hands and stay when the same owner re-claims: getting back
    // the token we held or released means nobody else held it in between.
    const continuous = !this.stale && (lease.fencingToken === this.token || lease.fencingToken === this.releasedToken);
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

  async release(): Promise<void> {
    const token = this.token;
    this.stopHeartbeat();
    if (token === null) return;
    this.token = null;
    this.releasedToken = token;
    await this.store.release(this.sessionId, this.owner, token);
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.ttlMs / 3)));
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private async renew(): Promise<void> {
    const token = this.token;
    if (token === null) return;
    const held = await this.store.renew(this.sessionId, this.owner, token, this.ttlMs).catch((error: unknown) => {
      this.log.warn({ sessionId: this.sessionId, err: String(error) }, 'lease-renew-failed');
      return true; // a database hiccup is not a lost lease; the next beat tries again
    });
    if (!held && this.token === token) {
      this.log.warn({ sessionId: this.sessionId, fencingToken: token }, 'lease-lost');
      this.lost = true;
      this.token = null;
      this.stopHeartbeat();
    }
  }
}
