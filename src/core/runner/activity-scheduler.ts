// A session runner's concurrency policy (docs/style.md §7): at most one activity at a time (a
// drive, a reset, entering a pause, a requested memory fork), each in one of the process's work
// slots and under the session's lease (R10). One that fails on a transient storage error is tried
// again with back-off, from the stored state, until the database answers (docs/product.md:
// database errors are survived); one that fails for good waits for a person. The lease is given up
// when the session goes idle. Which activity comes next is the runner's decision
// (SessionRunner.nextActivity).
import { isTransient } from '../errors.js';
import type { Log } from '../log.js';
import type { Claim, LeaseKeeper } from './lease-keeper.js';
import type { SessionRecord } from '../store.js';
import type { StorageOutage } from './storage-outage.js';
import type { WorkSlots } from './work-slots.js';

export type ActivityKind = 'drive' | 'reset' | 'pause' | 'memory';

/** One step the runner decided on, and the work that carries it out. */
export interface Activity {
  readonly kind: ActivityKind;
  readonly work: () => Promise<void>;
}

/** A claim that got the lease. */
export type HeldClaim = Exclude<Claim, 'refused'>;

/** What the scheduler needs from the runner it serves. */
export interface SchedulerContext {
  readonly log: Log;
  /** How long an idle session keeps its lease before giving it up (ms). */
  readonly leaseIdleGraceMs: number;
  readonly slots: WorkSlots;
  readonly lease: LeaseKeeper;
  readonly outage: StorageOutage;
  /** The session's memory runs: a live one keeps the lease (R3, R18). */
  readonly memory: { readonly idle: boolean; workerPrefilled(): void };
  /** The session as the runner last read it (logs, the outage note). */
  session(): SessionRecord;
  /** The state machine's choice of what runs next, or null; asked only when nothing runs. */
  next(): Activity | null;
  /**
   * Under the lease just claimed: brings the runner's mirror up to date; false when the session's
   * row no longer asks for this activity.
   */
  prepare(kind: ActivityKind, claim: HeldClaim): Promise<boolean>;
  /** A failed attempt may have left work undone: the next choice drives again. */
  retryDrive(): void;
  /** After the lease was given up: true (with the work marked pending) when a steer slipped in meanwhile. */
  workSlippedIn(): Promise<boolean>;
  /** Tells the thread an activity failed for good (a drive reports its own). */
  reportError(error: unknown): void;
}

export class ActivityScheduler {
  /**
   * Activities that failed for a reason retrying cannot fix: each waits for a person (a steer, a
   * resume, a command) instead of failing again and again; the others go on (a reset after a
   * failed drive is what a person often asks for). The runner clears them when a person acts.
   */
  readonly failed = new Set<ActivityKind>();
  /** When the session last did anything (the registry evicts idle runners). */
  lastActivityAt = Date.now();
  private activity: Promise<void> | null = null;
  private activityKind: ActivityKind | null = null;
  private stopping = false;

  constructor(private readonly context: SchedulerContext) {}

  /** The activity in flight, or null. */
  get running(): ActivityKind | null {
    return this.activityKind;
  }

  /** True while an activity runs (or waits for its slot or lease). */
  get busy(): boolean {
    return this.activity !== null;
  }

  /** True once stop() was called: nothing new starts. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Something happened now (the registry's idle clock). */
  touch(): void {
    this.lastActivityAt = Date.now();
  }

  /** Starts whatever the runner decides comes next, unless an activity runs or a retry waits. */
  pump(): void {
    // Waiting out a storage outage: the retry timer pumps.
    if (this.activity || this.stopping || this.context.outage.waiting) return;
    const next = this.context.next();
    if (next) this.begin(next);
  }

  /** Resolves when the current activity (and any that follows from it) is over. */
  async whenIdle(): Promise<void> {
    while (this.activity) await this.activity;
  }

  /** The last memory run ended: with no activity either, the lease may go. */
  memoryIdle(): void {
    if (!this.activity) this.releaseWhenIdle();
  }

  /** Stops taking work; resolves when the activity in flight ended or `graceMs` passed. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.context.lease.cancelRelease();
    this.context.outage.cancel();
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([this.activity ?? Promise.resolve(), deadline]);
  }

  private begin({ kind, work }: Activity): void {
    const { slots, lease, outage, memory } = this.context;
    this.activityKind = kind;
    this.touch();
    lease.cancelRelease();
    let refused = false;
    this.activity = slots.run(async () => {
      refused = !(await this.underLease(kind, work));
      outage.over(this.context.session());
    })
      .catch((error: unknown) => this.activityFailed(kind, error))
      .finally(() => {
        // No worker call is coming now: forks waiting for one to be read go at once.
        memory.workerPrefilled();
        this.activity = null;
        this.activityKind = null;
        this.touch();
        // Refused: the replica holding the lease does the work (a pending reset or pause would
        // otherwise be claimed for again and again here).
        if (!refused) this.pump();
        if (!this.activity) this.releaseWhenIdle();
      });
  }

  /**
   * Runs `work` while holding the lease; false when another replica's live lease means it works
   * instead.
   */
  private async underLease(kind: ActivityKind, work: () => Promise<void>): Promise<boolean> {
    const claim = await this.context.lease.claim();
    if (claim === 'refused') {
      this.context.log.debug({ sessionId: this.context.session().id }, 'lease-held-elsewhere');
      return false;
    }
    if (await this.context.prepare(kind, claim)) await work();
    return true;
  }

  /**
   * A transient storage failure is waited out: the activity is tried again with back-off, from
   * the stored state (the next claim reloads it), and a long outage gets one note in the thread.
   * Anything else waits for a person.
   */
  private activityFailed(kind: ActivityKind, error: unknown): void {
    const session = this.context.session();
    if (!isTransient(error) || this.stopping) {
      this.context.log.error({ sessionId: session.id, err: error }, `${kind}-failed`);
      if (this.stopping) return;
      this.failed.add(kind);
      if (kind !== 'drive') this.context.reportError(error); // a drive reported its own
      return;
    }
    // Whatever was in flight may or may not have been stored: the next claim re-reads it all.
    this.context.lease.forget();
    this.context.retryDrive();
    this.context.outage.failed(session, kind, error, () => this.pump());
  }

  /**
   * Keeps the lease for the idle grace period (the next turn often follows), then gives it up. A
   * live memory run of this replica keeps it too (R3, R18): another replica taking the session
   * now would not know the run is alive, and would fork a second summarizer beside it or record
   * it failed. The lease goes when the last run ends (memoryIdle).
   */
  private releaseWhenIdle(): void {
    const { lease, outage, memory } = this.context;
    const grace = this.stopping ? 0 : this.context.leaseIdleGraceMs;
    // While a storage outage is waited out, the retry needs the lease (and could not release it).
    lease.releaseWhenIdle(grace, () => !outage.ongoing && (this.stopping || memory.idle), () => this.afterRelease());
  }

  /** Work that slipped in while the lease was given up (a steer) is picked up again. */
  private async afterRelease(): Promise<void> {
    if (this.stopping || !(await this.context.workSlippedIn())) return;
    this.pump();
  }
}
