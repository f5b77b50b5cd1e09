// The live session runners of this process: one per session (R10), created on demand, evicted
// when idle, and woken at start-up for sessions with backlog (R12).
import { ShutdownRequested } from '../errors.js';
import type { AgentDeps } from '../agent-context.js';
import type { SessionRecord } from '../store.js';
import { retryTransient } from '../retry.js';
import { SessionRunner } from './session-runner.js';
import { WorkSlots } from './work-slots.js';
import { LeaseHeartbeat } from './lease-heartbeat.js';

export class RunnerRegistry {
  private readonly runners = new Map<string, Promise<SessionRunner>>();
  /** Shared by every runner of this process. */
  readonly slots: WorkSlots;
  /** Renews the leases of every session this process drives, in one statement per beat. */
  private readonly heartbeat: LeaseHeartbeat;
  private sweeper: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Aborted by stop(): ends a recovery still waiting for the database. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly deps: AgentDeps,
    /** Idle runners are dropped after this long (ms); their state lives in the store. */
    private readonly idleAfterMs = 10 * 60_000,
  ) {
    this.slots = new WorkSlots(deps.settings.runnerSlots);
    this.heartbeat = new LeaseHeartbeat(deps.replica.leases, deps.replica.owner, deps.replica.leaseTtlMs, deps.log);
  }

  /**
   * The runner of a session, loading it on first use (from `seen`, the session's row as just
   * read, when the caller has it). A process that never drives (ingest) reads
   * it fresh each time instead: a worker elsewhere changes the session, and nothing here would
   * bring a kept copy up to date (its status would show the session as it was).
   */
  get(sessionId: string, seen?: SessionRecord): Promise<SessionRunner> {
    if (this.deps.replica.role === 'ingest') return SessionRunner.load(this.deps, sessionId, this.slots, this.heartbeat);
    let runner = this.runners.get(sessionId);
    if (!runner) {
      runner = SessionRunner.load(this.deps, sessionId, this.slots, this.heartbeat, seen).then(async (loaded) => {
        // Whatever a crashed process left owed to the thread goes out first.
        await loaded.redeliver().catch((error: unknown) => this.deps.log.warn({ sessionId, err: String(error) }, 'redeliver-failed'));
        return loaded;
      });
      this.runners.set(sessionId, runner);
      runner.catch(() => this.runners.delete(sessionId));
    }
    return runner;
  }

  /** Whether the session's runner is loaded or loading. */
  has(sessionId: string): boolean {
    return this.runners.has(sessionId);
  }

  /** The runner if it is loaded, without loading it. */
  async peek(sessionId: string): Promise<SessionRunner | undefined> {
    return this.runners.get(sessionId);
  }

  get size(): number {
    return this.runners.size;
  }

  /**
   * Drives every session that has backlog, and re-sends what is owed (crash recovery, R12). A
   * database that is away at start-up is waited for (R18), until stop().
   */
  async recover(): Promise<number> {
    const listed = await retryTransient(
      async () => [...(await this.deps.stores.sessions.withBacklog()), ...(await this.deps.stores.deliveries.sessionsWithPending())],
      {
        budgetMs: Number.POSITIVE_INFINITY,
        signal: this.stopping.signal,
        onRetry: (error, attempt) => this.deps.log.warn({ attempt, err: String(error) }, 'session-recovery-retrying'),
      },
    );
    const ids = [...new Set(listed)];
    for (const id of ids) {
      // One session that cannot load must not stop the others (or the start-up).
      await this.get(id).then(
        (runner) => this.wakeOrphan(runner),
        (error: unknown) => this.deps.log.error({ sessionId: id, err: String(error) }, 'session-recovery-failed'),
      );
    }
    this.deps.log.info({ sessions: ids.length }, 'sessions-recovered');
    return ids.length;
  }

  /**
   * Starts the background duties: waking loaded runners on wake-ups from any replica, taking
   * over sessions whose driver died (expired lease), and evicting idle runners.
   */
  startSweeping(): void {
    // Only the replica holding the lease acts on a wake-up; with no live owner, the replica that
    // received the message takes the lease itself (Agent.submit), and the sweeper covers the rest.
    // A worker process (HIPPO_ROLE=worker) receives no messages: it takes up any session it hears
    // of, and the first worker to claim the lease drives it.
    const takesUp = this.deps.replica.role === 'worker';
    this.unsubscribe = this.deps.replica.wakeups.subscribe((sessionId, reason) => {
      if (reason === 'missed' && takesUp) void this.sweep();
      if (reason === 'missed') {
        // Notifications were lost: the sessions this replica drives look for steers and flags.
        for (const pending of this.runners.values()) {
          void pending.then((runner) => {
            if (runner.lease.token === null) return;
            runner.flagsChanged();
            this.wakeOrphan(runner);
          }, () => undefined);
        }
        return;
      }
      const pending = this.runners.get(sessionId) ?? (takesUp ? this.get(sessionId) : undefined);
      void pending?.then((runner) => {
        if (runner.lease.token === null && !takesUp) return;
        // A person's message or command, said to another process: a session whose drive failed
        // for good is driven again (sweeps and recovery wake without it: no failure loop).
        if (reason === 'flags') runner.flagsChanged({ byPerson: true });
        if (reason === 'approval') return runner.approvalDecided();
        if (reason === 'memory') runner.requestsArrived();
        else if (reason === 'work' || takesUp) runner.wake({ byPerson: true });
      }, (error: unknown) => this.deps.log.warn({ sessionId, err: String(error) }, 'wakeup-load-failed'));
    });
    let sweeps = 0;
    this.sweeper = setInterval(() => {
      sweeps += 1;
      void this.sweep();
      if (sweeps % 20 === 0) void this.evictIdle();
    }, this.deps.replica.sweepIntervalMs);
    this.sweeper.unref();
  }

  /** Wakes sessions with backlog whose driver is gone (crashed replica, missed wake-up). */
  async sweep(): Promise<number> {
    try {
      const ids = await this.deps.replica.leases.orphaned(this.deps.replica.sweepIntervalMs);
      for (const id of ids) this.wakeOrphan(await this.get(id));
      if (ids.length) this.deps.log.info({ sessions: ids.length }, 'sessions-swept');
      return ids.length;
    } catch (error) {
      this.deps.log.warn({ err: String(error) }, 'sweep-failed');
      return 0;
    }
  }

  /** A session left with work by a driver that is gone: backlog, and a person's request whose notification was lost. */
  private wakeOrphan(runner: SessionRunner): void {
    runner.wake();
    runner.requestsArrived();
  }

  /** Drops runners that have been quiet for idleAfterMs. */
  async evictIdle(now = Date.now()): Promise<number> {
    let evicted = 0;
    for (const [id, pending] of this.runners) {
      const runner = await pending.catch(() => undefined);
      if (runner && runner.quiet && runner.state !== 'running' && now - runner.lastActivityAt >= this.idleAfterMs) {
        this.runners.delete(id);
        evicted += 1;
      }
    }
    return evicted;
  }

  /** Stops every runner: running drives stop at their next checkpoint. */
  async stop(graceMs?: number): Promise<void> {
    this.stopping.abort(new ShutdownRequested('stopping'));
    clearInterval(this.sweeper);
    this.unsubscribe?.();
    const runners = await Promise.all([...this.runners.values()].map((runner) => runner.catch(() => undefined)));
    await Promise.all(runners.map((runner) => runner?.stop(graceMs)));
  }
}
