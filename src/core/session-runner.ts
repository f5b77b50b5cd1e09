// One runner per session (R10): it alone drives the worker loop, takes pause/resume requests from
// people (R11), and coordinates resets with the worker (R6–R8). Its concurrency policy is the
// small state machine in pump(): at most one activity (a drive or a reset) at a time.
import type { AgentDeps } from './agent-context.js';
import { ConflictError } from './errors.js';
import type { StopReason } from './events.js';
import { buildInitMessages } from './init-messages.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveContext } from './live-context.js';
import { MemoryManager } from './memory-manager.js';
import { changeCounts, memoryRunChanges } from './memory-run-changes.js';
import { renderSteer } from './prompts.js';
import { resetContext } from './reset.js';
import { SteerInbox } from './steer-inbox.js';
import type { WorkSlots } from './work-slots.js';
import type { SessionRecord, SteerRecord } from './store.js';
import { runWorkerLoop, type CheckpointKind } from './worker-loop.js';

export type RunnerState = 'idle' | 'running' | 'paused' | 'resetting' | 'failed';

export class SessionRunner {
  readonly memory: MemoryManager;
  /** When the runner last did anything (the registry evicts idle runners). */
  lastActivityAt = Date.now();
  private activity: Promise<void> | null = null;
  private activityKind: 'drive' | 'reset' | 'pause' | null = null;
  /** The last drive failed: wait for a person (steer or resume) instead of retrying forever. */
  private failed = false;
  /** Something may have given the worker work since the last drive began (steer, resume, reset). */
  private workPending = false;
  /** Another replica may have changed the session's flags (a person's command it received). */
  private flagsStale = false;
  private stopping = false;
  private readonly lifetime = new AbortController();
  /** One driver across replicas: every activity runs under the session's lease. */
  readonly lease: LeaseKeeper;
  /** Kept for a grace period after an activity, so back-to-back turns claim it only once. */
  private releaseTimer: NodeJS.Timeout | undefined;
  readonly steers: SteerInbox;

  private constructor(
    private readonly deps: AgentDeps,
    private record: SessionRecord,
    readonly context: LiveContext,
    /** Activities hold one of the process's slots, except while they wait on a model or tool. */
    private readonly slots: WorkSlots,
  ) {
    this.lease = new LeaseKeeper(deps.replica.leases, record.id, deps.replica.owner, deps.replica.leaseTtlMs, deps.log);
    this.steers = new SteerInbox(context, record.id, (steer: SteerRecord) => ({ role: 'user', content: renderSteer(steer) }));
    this.memory = new MemoryManager(deps, {
      session: () => this.record,
      context,
      requestReset: (segmentId) => void this.requestReset(segmentId),
      signal: this.lifetime.signal,
    });
  }

  /** Loads a session's current segment (its init messages are written by the first activity). */
  static async load(deps: AgentDeps, sessionId: string, slots: WorkSlots): Promise<SessionRunner> {
    const session = await deps.stores.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    const { segment, messages } = await deps.stores.context.load(sessionId);
    const context = new LiveContext(deps.stores.context, segment, messages);
    if (segment.contextTokens > 0) context.lastPromptTokens = segment.contextTokens;
    return new SessionRunner(deps, session, context, slots);
  }

  get session(): SessionRecord {
    return this.record;
  }

  get state(): RunnerState {
    if (this.activityKind === 'reset' || this.record.resetRequested) return 'resetting';
    if (this.activityKind === 'drive') return 'running';
    if (this.record.paused) return 'paused';
    return this.failed ? 'failed' : 'idle';
  }

  /** True when nothing runs: no drive, no reset, no memory run. */
  get quiet(): boolean {
    return this.activity === null && !this.memory.summarizerRunning;
  }

  /**
   * Emits again what the thread is still owed: answers and notes that were stored but never taken
   * by a chat adapter (the process died in between). Adapters deduplicate by idempotency key.
   */
  async redeliver(): Promise<number> {
    const session = this.record;
    const pending = await this.deps.stores.deliveries.pending(session.id);
    for (const answer of pending.answers) {
      // Owed regardless of who holds the lease now: no fencing token.
      this.deps.events.emit({ type: 'answer', session, text: answer.text, segmentId: answer.segmentId, seq: answer.seq, fencingToken: null });
    }
    for (const reset of pending.resets) {
      this.deps.events.emit({ type: 'context-reset', session, segmentId: reset.segmentId, segmentOrdinal: reset.ordinal, tokensBefore: reset.tokensBefore, tokensAfter: reset.tokensAfter, carriedMessages: reset.carriedMessages });
    }
    for (const run of pending.memoryRuns) {
      const changes = (await memoryRunChanges(this.deps.stores.documents, run.memoryRunId)).map(changeCounts);
      this.deps.events.emit({ type: 'memory-updated', session, memoryRunId: run.memoryRunId, round: run.round, changes, usage: run.usage });
    }
    const total = pending.answers.length + pending.resets.length + pending.memoryRuns.length;
    if (total) this.deps.log.info({ sessionId: session.id, answers: pending.answers.length, notes: total - pending.answers.length }, 'deliveries-resent');
    return total;
  }

  /** Starts driving if there is backlog (recovery after a restart, R12). */
  wake(): void {
    this.steers.arrived();
    this.workPending = true;
    this.pump();
  }

  /**
   * A person changed the session's flags on another replica (pause, resume, reset): re-read them
   * before the next step, at once when idle.
   */
  flagsChanged(): void {
    this.flagsStale = true;
    this.steers.arrived();
    this.workPending = true;
    if (this.activity) return; // the running activity re-reads them at its next checkpoint
    this.refreshFlags().then(
      () => this.pump(),
      (error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'flags-refresh-failed'),
    );
  }

  /** A steer message was stored. It resumes a paused session unless a reset is pending (R9, R11). */
  async steerArrived(): Promise<void> {
    this.steers.arrived();
    // Holding the lease, this runner hears of flags changed elsewhere ('flags' wake-ups, and
    // 'missed' when notifications may have been lost); otherwise it reads them now.
    if (this.lease.token === null) await this.refreshUnlessDriving();
    this.failed = false;
    this.workPending = true;
    if (!this.record.resetRequested && (this.record.paused || this.record.pauseRequested)) {
      await this.resume();
      return;
    }
    this.pump();
  }

  /**
   * R11: takes effect at the next checkpoint; at once when idle. Only the lease holder pauses: when
   * another replica drives, it reads the request at its next checkpoint (Agent.pause tells it).
   */
  async pause(): Promise<void> {
    await this.refreshUnlessDriving();
    if (this.record.paused) return;
    await this.setFlags({ pauseRequested: true });
    this.deps.events.emit({ type: 'pause-requested', session: this.record });
    if (!this.activity) {
      this.pump();
      await this.whenIdle();
    }
  }

  /** R11: clears the pause and continues with any backlog, without a new message. */
  async resume(): Promise<void> {
    await this.refreshUnlessDriving();
    this.failed = false;
    this.workPending = true;
    if (this.record.paused || this.record.pauseRequested) {
      await this.setFlags({ paused: false, pauseRequested: false });
      this.deps.events.emit({ type: 'resumed', session: this.record });
    }
    this.pump();
  }

  /**
   * R6/R8: asks for a reset of the given segment (default: the current one). Ignored when the
   * segment already ended (a stale decider) or a reset is already pending.
   */
  async requestReset(segmentId = this.context.segment.id): Promise<boolean> {
    await this.refreshUnlessDriving();
    if (segmentId !== this.context.segment.id || this.record.resetRequested || this.stopping) {
      this.deps.log.info({ sessionId: this.record.id, segmentId }, 'reset-request-ignored');
      return false;
    }
    await this.setFlags({ resetRequested: true });
    this.pump();
    return true;
  }

  /** Stops taking work; a running drive stops at its next checkpoint. Resolves when quiet. */
  async stop(graceMs = 25_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.releaseTimer);
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([this.activity ?? Promise.resolve(), deadline]);
    this.lifetime.abort(new Error('shutdown'));
    await Promise.race([Promise.all([this.activity, this.memory.settle()]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    await this.lease.release().catch((error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'lease-release-failed'));
  }

  /** Resolves when the current drive or reset (and any that follows from it) is over. */
  async whenIdle(): Promise<void> {
    while (this.activity) await this.activity;
  }

  private pump(): void {
    if (this.activity || this.stopping) return;
    if (this.record.resetRequested) this.begin('reset', () => this.performReset());
    else if (this.record.pauseRequested) this.begin('pause', () => this.enterPaused());
    else if (this.workPending && !this.record.paused && !this.failed) {
      this.workPending = false;
      this.begin('drive', () => this.drive());
    }
  }

  private begin(kind: 'drive' | 'reset' | 'pause', work: () => Promise<void>): void {
    this.activityKind = kind;
    this.lastActivityAt = Date.now();
    clearTimeout(this.releaseTimer);
    let refused = false;
    this.activity = this.slots.run(async () => {
      refused = !(await this.underLease(kind, work));
    })
      .catch((error: unknown) => this.deps.log.error({ sessionId: this.record.id, err: error }, `${kind}-failed`))
      .finally(() => {
        this.activity = null;
        this.activityKind = null;
        this.lastActivityAt = Date.now();
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
  private async underLease(kind: 'drive' | 'reset' | 'pause', work: () => Promise<void>): Promise<boolean> {
    const claim = await this.lease.claim();
    if (claim === 'refused') {
      this.deps.log.debug({ sessionId: this.record.id }, 'lease-held-elsewhere');
      return false;
    }
    // Another replica may have written since this mirror was loaded (even a just-loaded runner
    // may have waited for the lease): re-read unless the lease stayed ours.
    if (claim === 'changed-hands') await this.reload();
    // Held all along, the lease saw every wake-up; otherwise a steer may have been stored while
    // this replica was not listening for them.
    if (claim !== 'held') this.steers.arrived();
    if (this.flagsStale) await this.refreshFlags();
    // A command on another replica asked for a reset or a pause: that comes first (pump decides).
    if (kind === 'drive' && (this.record.resetRequested || this.record.pauseRequested || this.record.paused)) return true;
    // A new session's first segment gets its init messages here, by the lease holder only.
    if (this.context.entries.length === 0) {
      for (const message of await buildInitMessages(this.deps, this.record)) await this.context.append(message, { isInit: true });
    }
    await work();
    return true;
  }

  /** Keeps the lease for the idle grace period (the next turn often follows), then gives it up. */
  private releaseWhenIdle(): void {
    const grace = this.deps.replica.leaseIdleGraceMs;
    if (grace <= 0 || this.stopping) {
      void this.releaseLease();
      return;
    }
    this.releaseTimer = setTimeout(() => {
      if (!this.activity) void this.releaseLease();
    }, grace);
    this.releaseTimer.unref();
  }

  /** Gives the lease up at idle; work that slipped in meanwhile (a steer) is picked up again. */
  private async releaseLease(): Promise<void> {
    if (this.lease.token === null) return;
    try {
      await this.lease.release();
      if (!this.stopping && !this.record.paused && (await this.deps.stores.steers.countQueued(this.record.id)) > 0) {
        this.steers.arrived();
        this.workPending = true;
        this.pump();
      }
    } catch (error) {
      this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'lease-release-failed');
    }
  }

  /** Re-reads the session and its context after another replica may have changed them. */
  private async reload(): Promise<void> {
    await this.refreshFlags();
    const { segment, messages } = await this.deps.stores.context.load(this.record.id);
    this.context.replace(segment, messages);
    if (segment.contextTokens > 0) this.context.lastPromptTokens = segment.contextTokens;
    // The replica that held the lease may have died with answers or notes still owed.
    await this.redeliver();
  }

  /** Re-reads the session's flags after another replica may have changed them. */
  private async refreshFlags(): Promise<void> {
    this.flagsStale = false;
    const session = await this.deps.stores.sessions.get(this.record.id);
    if (session) this.record = session;
  }

  /** Flags may have been changed by another replica while this one was not driving. */
  private async refreshUnlessDriving(): Promise<void> {
    if (!this.activity) await this.refreshFlags();
  }

  private async drive(): Promise<void> {
    if (this.context.tail() === 'settled' && !this.steers.mayHaveQueued) return;
    const session = this.record;
    // A run starts when the loop finds work: a wake-up for steers already taken is no run.
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      this.deps.events.emit({ type: 'run-start', session });
    };
    let reason: StopReason;
    try {
      reason = await runWorkerLoop({
        deps: this.deps,
        session: () => this.record,
        context: this.context,
        checkpoint: (kind) => this.checkpoint(kind),
        steers: this.steers,
        onWork: start,
        waiting: (wait) => this.slots.outside(wait),
        fencingToken: () => this.lease.token,
        signal: this.lifetime.signal,
      });
    } catch (error) {
      start();
      if (error instanceof ConflictError) {
        // Another replica wrote this session (our lease lapsed): stop quietly; reload next time.
        this.deps.log.warn({ sessionId: session.id, err: error.message }, 'run-superseded');
        this.lease.forget();
        this.deps.events.emit({ type: 'run-end', session: this.record, reason: 'lease-lost' });
        return;
      }
      reason = this.stopping ? 'shutdown' : 'error';
      if (!this.stopping) this.failed = true;
      const retryable = typeof error === 'object' && error !== null && 'retryable' in error ? Boolean(error.retryable) : false;
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'internal';
      const message = error instanceof Error ? error.message : String(error);
      this.deps.log.error({ sessionId: session.id, err: message, code }, 'run-failed');
      this.deps.events.emit({ type: 'error', session: this.record, error: { code, message, retryable } });
    }
    if (started) this.deps.events.emit({ type: 'run-end', session: this.record, reason });
  }

  /** The two safe points: memory trigger first, then the reset/pause/shutdown gate. */
  private async checkpoint(_kind: CheckpointKind): Promise<StopReason | null> {
    this.lastActivityAt = Date.now();
    if (this.flagsStale) await this.refreshFlags();
    // With a reset pending, no new fork: its marker would leave nothing to carry over and cut the
    // step in flight (reference §9.1 defect 10). The reset comes first.
    if (!this.record.resetRequested) await this.memory.onCheckpoint();
    if (this.record.resetRequested && !this.mayDeferReset()) return 'reset';
    if (this.record.pauseRequested || this.record.paused) {
      await this.enterPaused();
      return 'paused';
    }
    if (this.stopping) return 'shutdown';
    if (this.lease.lost) return 'lease-lost';
    return null;
  }

  /** R6, deferred (when configured): the worker goes on while the summarizer it would wait for runs. */
  private mayDeferReset(): boolean {
    const { settings } = this.deps;
    if (!settings.deferResetWhileSummarizing || !this.memory.summarizerRunning) return false;
    const tokens = this.context.lastPromptTokens ?? this.context.segment.contextTokens;
    return tokens * 100 < settings.deferredResetLimitPercent * settings.contextWindow;
  }

  private async enterPaused(): Promise<void> {
    await this.setFlags({ paused: true, pauseRequested: false });
    this.deps.events.emit({ type: 'paused', session: this.record });
  }

  private async performReset(): Promise<void> {
    try {
      // R6's wait for a running summarizer holds no slot.
      await this.slots.outside(() => this.memory.waitForSummarizer());
      await resetContext(this.deps, this.record, this.context, this.memory);
    } finally {
      this.workPending = true;
      // R7: a person's pause survives; the worker continues by itself when there is backlog.
      await this.setFlags({ resetRequested: false });
    }
  }

  private async setFlags(flags: Partial<Pick<SessionRecord, 'paused' | 'pauseRequested' | 'resetRequested'>>): Promise<void> {
    await this.deps.stores.sessions.setFlags(this.record.id, flags);
    this.record = { ...this.record, ...flags };
  }
}
