// Replicas: leases and wake-ups (one driver per session across processes, R10).

/** Who drives a session, and the fencing token that orders its writers. */
export interface Lease {
  sessionId: string;
  owner: string;
  fencingToken: number;
  expiresAt: Date;
  /**
   * How long the lease stays held after the statement ran (ms), computed by the database on its
   * own clock (expires_at − now()): the holder counts it from when it sent the statement, so a
   * skew between its clock and the database's cannot make it believe it holds an expired lease.
   */
  validForMs: number;
}

export interface LeaseStore {
  /**
   * Takes the lease for `owner` unless another owner holds an unexpired one (then null). The
   * token grows when the lease changes hands; the same owner re-claiming keeps its token.
   */
  acquire(sessionId: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /**
   * Extends every lease `owner` holds of `leases` in one statement (a process renews all its
   * sessions at one beat); returns the sessions still held, each with how long it now stays held
   * (ms, on the database's clock, as Lease.validForMs); the others were lost: expired and taken.
   */
  renewAll(owner: string, leases: ReadonlyArray<{ sessionId: string; fencingToken: number }>, ttlMs: number): Promise<Map<string, number>>;
  /** Gives the lease up at idle (owner and token are kept: tokens only grow). */
  release(sessionId: string, owner: string, fencingToken: number): Promise<void>;
  /** Current fencing token of a session (0 when none was ever taken). */
  currentToken(sessionId: string): Promise<number>;
  /**
   * Sessions with backlog whose driver is gone: an expired lease, or work queued for longer than
   * `graceMs` with no live owner (the receiving replica normally takes those itself).
   */
  orphaned(graceMs: number): Promise<string[]>;
}

/**
 * Why a session is woken: `work`, a person's message was stored; `flags`, a person's command (or a
 * reset request) changed its flags; `memory`, a person's remember / forget was stored; `approval`,
 * a person decided a tool call that waits (R23); `missed`, notifications may have been lost (every
 * session is looked at again).
 */
export type WakeReason = 'work' | 'flags' | 'memory' | 'approval' | 'missed';

/** Cross-replica wake-ups: "this session has new work" (Postgres LISTEN/NOTIFY). */
export interface Wakeups {
  notify(sessionId: string, reason?: WakeReason): Promise<void>;
  /** Calls `handler` for every notification, from any replica (this one included). */
  subscribe(handler: (sessionId: string, reason: WakeReason) => void): () => void;
  close(): Promise<void>;
}
