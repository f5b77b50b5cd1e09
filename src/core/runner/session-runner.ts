// One runner per session (R10): it alone drives the worker loop, takes pause/resume requests from
// people (R11), and coordinates resets with the worker (R6–R8). It decides what the next activity
// is (nextActivity: reset, pause, drive or a requested memory fork) and what each does; its
// ActivityScheduler runs them one at a time, under the lease, retried through storage outages.
// Longer than ~400 lines: people's commands, the choice of activity and the activities (drive,
// reset, pause, R19's hard limit) all read and write one mirror of the session's row.
import type { AgentDeps } from '../agent-context.js';
import { ApprovalGate } from '../loop/approval-gate.js';
import { saveAttachments } from '../loop/attachments.js';
import { estimateTokens } from '../loop/context-window.js';
import { ActivityScheduler, type Activity, type ActivityKind, type HeldClaim } from './activity-scheduler.js';
import { ConflictError, ContextTooLongError, isTransient } from '../errors.js';
import type { StopReason } from '../events.js';
import { buildInitMessages } from '../memory/init-messages.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveContext } from '../loop/live-context.js';
import { MemoryManager } from '../memory/memory-manager.js';
import { steerMessage } from '../prompts/prompts.js';
import { redeliver } from './redelivery.js';
import { resetContext } from '../memory/reset.js';
import { RunStop } from './run-stop.js';
import { retryTransient } from './retry.js';
import { SessionBudget } from './session-budget.js';
import { StepLimit } from './step-limit.js';
import { StorageOutage } from './storage-outage.js';
import { SteerInbox } from './steer-inbox.js';
import type { WorkSlots } from './work-slots.js';
import type { LeaseHeartbeat } from './lease-heartbeat.js';
import type { PersonRequest, SessionRecord, SteerRecord } from '../store.js';
import { runWorkerLoop } from '../loop/worker-loop.js';

export type RunnerState = 'idle' | 'running' | 'paused' | 'resetting' | 'failed';

/** How long a decided reset is retried while the database is away before it is given up (ms). */
const resetRequestBudgetMs = 10 * 60_000;

export class SessionRunner {
  readonly memory: MemoryManager;
  /** Runs the activities this runner decides on: one at a time, under the lease, retried. */
  private readonly scheduler: ActivityScheduler;
  /** Activities that failed for good and wait for a person (the scheduler's; cleared here). */
  private readonly failed: Set<ActivityKind>;
  /** Something may have given the worker work since the last drive began (steer, resume, reset). */
  private workPending = false;
  /** Another replica may have changed the session's flags (a person's command it received). */
  private flagsStale = false;
  /** Bumped by every change this runner makes to its mirror, so a read begun before one never undoes it. */
  private localChanges = 0;
  /** The segment whose open tool batch a drive was started to close before its reset. */
  private batchClosingTried: string | null = null;
  /** The session's spend caps, checked before each model call. */
  private readonly budget: SessionBudget;
  /** R21: the run's step limit, checked before each worker call. */
  private readonly steps: StepLimit;
  /** The storage outage this runner waits out, if any. */
  private readonly outage: StorageOutage;
  private readonly lifetime = new AbortController();
  /** A person's Stop of the drive in flight (its model call and tools; not memory runs). */
  private readonly runStop = new RunStop();
  /** R23: tool calls of this session that wait for a person. */
  private readonly approvals: ApprovalGate;
  /** One driver across replicas: every activity runs under the session's lease. */
  readonly lease: LeaseKeeper;
  readonly steers: SteerInbox;
  /**
   * Why the pending reset of `segmentId` was asked for by the system, not a decider or a person
   * (R19: the note says so). Set when this runner stores a request: a reset of another segment
   * (the request was carried out elsewhere, or failed and a later one came) is not labelled by it.
   */
  private resetReason: { segmentId: string; reason: 'context-full' } | null = null;
  /**
   * A segment that started at or above the hard limit (a tiny window: the init messages fill it):
   * another forced reset could not make it smaller, so none is asked for in it (no reset loop).
   */
  private fullAtStart: string | null = null;
  /** The provider refused the worker's call as too long and a reset has been tried for it (R19: once). */
  private tooLongRetried = false;
  /** Counts people's messages and commands (personActed): one that came during a failing drive is work after it. */
  private personActs = 0;

  private constructor(
    private readonly deps: AgentDeps,
    private record: SessionRecord,
    readonly context: LiveContext,
    /** Activities hold one of the process's slots, except while they wait on a model or tool. */
    private readonly slots: WorkSlots,
    heartbeat: LeaseHeartbeat,
  ) {
    this.lease = new LeaseKeeper(deps.replica.leases, record.id, deps.replica.owner, deps.replica.leaseTtlMs, deps.log, deps.replica.role !== 'ingest', heartbeat);
    this.budget = new SessionBudget(deps);
    this.steps = new StepLimit(deps);
    this.outage = new StorageOutage(deps);
    this.approvals = new ApprovalGate(deps.approvals);
    const saver = deps.attachments;
    this.steers = new SteerInbox(
      context, record.id, (steer: SteerRecord, saved) => steerMessage(steer, saved),
      // Downloading waits on the network: it holds no work slot.
      saver ? (steers) => this.slots.outside(() => saveAttachments(saver, this.record, steers, this.lifetime.signal)) : undefined,
    );
    this.memory = new MemoryManager(deps, {
      session: () => this.record,
      context,
      requestReset: async (segmentId) => void (await this.requestReset(segmentId)),
      signal: this.lifetime.signal,
      memoryIdle: () => this.scheduler.memoryIdle(),
    });
    this.scheduler = new ActivityScheduler({
      log: deps.log,
      leaseIdleGraceMs: deps.replica.leaseIdleGraceMs,
      slots,
      lease: this.lease,
      outage: this.outage,
      memory: this.memory,
      session: () => this.record,
      next: () => this.nextActivity(),
      prepare: (kind, claim) => this.prepare(kind, claim),
      retryDrive: () => {
        this.workPending = true;
      },
      workSlippedIn: () => this.workSlippedIn(),
      reportError: (error) => this.emitError(error),
    });
    this.failed = this.scheduler.failed;
  }

  /** Loads a session's current segment (its init messages are written by the first activity). */
  static async load(deps: AgentDeps, sessionId: string, slots: WorkSlots, heartbeat: LeaseHeartbeat, seen?: SessionRecord): Promise<SessionRunner> {
    const session = seen?.id === sessionId ? seen : await deps.stores.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    const { segment, messages } = await deps.stores.context.load(sessionId);
    const context = new LiveContext(deps.stores.context, segment, messages, estimateTokens(deps.tools.definitions));
    return new SessionRunner(deps, session, context, slots, heartbeat);
  }

  get session(): SessionRecord {
    return this.record;
  }

  /** When the runner last did anything (the registry evicts idle runners). */
  get lastActivityAt(): number {
    return this.scheduler.lastActivityAt;
  }

  get state(): RunnerState {
    const running = this.scheduler.running;
    if (running === 'reset' || this.record.resetRequested) return 'resetting';
    if (running === 'drive') return 'running';
    if (this.record.paused) return 'paused';
    return this.failed.size > 0 ? 'failed' : 'idle';
  }

  /** True when nothing runs: no drive, no reset, no memory run, no retry pending. */
  get quiet(): boolean {
    return !this.scheduler.busy && !this.memory.summarizerRunning && !this.outage.ongoing;
  }

  /** Emits again what the thread is still owed (R17); adapters deduplicate by idempotency key. */
  async redeliver(): Promise<number> {
    const notes = this.steps.redeliver(this.record) ? 1 : 0; // R21's note, when the session is paused at the limit
    return notes + (await redeliver(this.deps, this.record, { segmentId: this.context.segment.id, entries: this.context.entries }));
  }

  /**
   * Starts driving if there is backlog (recovery after a restart, R12; a sweep). `byPerson`: the
   * wake-up carries a person's new work (a message stored by another process), which drives a
   * session whose drive failed for good again, as a message said here does (steerArrived); a
   * sweep's or a recovery's wake-up does not, so a failure is not re-driven in a loop.
   */
  wake(options: { byPerson?: boolean } = {}): void {
    if (options.byPerson) this.personActed();
    this.steers.arrived();
    this.workPending = true;
    this.pump();
  }

  /** R23: a person decided a tool call of this session (maybe on another replica): a waiting drive looks now. */
  approvalDecided(): void {
    this.approvals.poke();
  }

  /** A person's request (remember / forget) was stored, maybe by another process: the lease holder carries it out. */
  requestsArrived(): void {
    this.memory.noteRequests();
    this.failed.delete('memory');
    this.pump();
  }

  /**
   * A person changed the session's flags on another replica (pause, resume, reset): re-read them
   * before the next step, at once when idle. `byPerson`: a person's command (a resume drives a
   * failed session again, as one said here does); not when notifications were only missed.
   */
  flagsChanged(options: { byPerson?: boolean } = {}): void {
    if (options.byPerson) this.personActed();
    this.flagsStale = true;
    this.steers.arrived();
    this.workPending = true;
    if (this.scheduler.running === 'drive') this.readStopRequest();
    this.approvals.poke(); // a pause leaves a call that waits for a person
    if (this.scheduler.busy) return; // the running activity re-reads them at its next checkpoint
    this.refreshFlags().then(
      () => this.pump(),
      (error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'flags-refresh-failed'),
    );
  }

  /**
   * A steer message was stored. It resumes a paused session (R11); with a reset pending it is
   * taken only after the reset (R9), which the resumed runner carries out first.
   */
  async steerArrived(options: { /** The session's row was read after the message was stored. */ rowJustRead?: boolean } = {}): Promise<void> {
    this.steers.arrived();
    // Holding the lease, this runner hears of flags changed elsewhere ('flags' wake-ups, and
    // 'missed' when notifications may have been lost); otherwise it reads them now.
    if (this.lease.token === null && !options.rowJustRead) await this.refreshUnlessDriving();
    this.personActed();
    this.workPending = true;
    if (this.record.paused || this.record.pauseRequested) {
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
    this.failed.delete('pause');
    if (this.record.paused) return;
    await this.setFlags({ pauseRequested: true });
    this.deps.events.emit({ type: 'pause-requested', session: this.record });
    if (!this.scheduler.busy) {
      this.pump();
      await this.whenIdle();
    }
  }

  /**
   * A person's Stop: the model call and tools in flight are cancelled now (each cancelled or
   * unstarted tool call is answered "stopped by …", an unfinished answer is dropped), and the
   * session then waits like a paused one until a steer message or resume. Stored first, so the
   * driver on another replica sees it (Agent notifies it) and a crash cannot undo it. Memory runs
   * go on: they only read the context, and stopping them would leave nothing to gain.
   */
  async stopNow(by: string): Promise<'stopping' | 'already-paused'> {
    await this.refreshUnlessDriving();
    if (this.record.paused && this.scheduler.running !== 'drive') return 'already-paused';
    await this.setFlags({ stopRequestedBy: by, pauseRequested: true });
    this.deps.events.emit({ type: 'stop-requested', session: this.record, by });
    this.runStop.abort(by);
    if (!this.scheduler.busy) this.pump();
    return 'stopping';
  }

  /** A Stop said on another replica takes effect now, not at the next checkpoint. */
  private readStopRequest(): void {
    this.deps.stores.sessions.get(this.record.id).then(
      (session) => {
        if (session?.stopRequestedBy) this.runStop.abort(session.stopRequestedBy);
      },
      (error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'stop-read-failed'),
    );
  }

  /** R11: clears the pause and continues with any backlog, without a new message. */
  async resume(): Promise<void> {
    await this.refreshUnlessDriving();
    this.personActed();
    this.workPending = true;
    if (this.record.paused || this.record.pauseRequested) {
      // R21: resuming a paused session begins a new run (a fresh step count).
      await this.setFlags({ paused: false, pauseRequested: false, stopRequestedBy: null, ...(this.record.paused ? { runStartStep: this.record.workerSteps } : {}) });
      this.deps.events.emit({ type: 'resumed', session: this.record });
    }
    this.pump();
  }

  /**
   * R6/R8: asks for a reset of the given segment (null: whichever is current, a person's reset);
   * true when it is now pending. Ignored when the session is no longer in that segment (a stale
   * decider, whatever this replica's mirror says) or a reset is already pending: the session's row
   * decides. A decided reset is stored durably, retried with back-off while the database is away,
   * and the lease holder is told; this never rejects.
   */
  async requestReset(segmentId: string | null = null, options: { byPerson?: boolean; /** R19: the system's own reset. */ reason?: 'context-full' } = {}): Promise<boolean> {
    if (options.byPerson) this.failed.delete('reset');
    let stored: boolean;
    try {
      stored = await retryTransient(() => this.storeResetRequest(segmentId, options.reason ?? null), {
        budgetMs: resetRequestBudgetMs,
        signal: this.lifetime.signal,
        onRetry: (error, attempt, waitMs) => this.deps.log.warn({ sessionId: this.record.id, attempt, waitMs, err: String(error) }, 'reset-request-retry'),
      });
    } catch (error) {
      this.deps.log.error({ sessionId: this.record.id, segmentId, err: String(error) }, 'reset-request-failed');
      return false;
    }
    // The replica holding the lease carries it out: this one, or another that hears it now.
    if (stored && this.lease.token === null) await this.deps.replica.wakeups.notify(this.record.id, 'flags').catch((error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'reset-notify-failed'));
    return stored;
  }

  private async storeResetRequest(segmentId: string | null, reason: 'context-full' | null): Promise<boolean> {
    if (this.scheduler.stopped || !(await this.deps.stores.sessions.requestReset(this.record.id, segmentId))) {
      this.deps.log.info({ sessionId: this.record.id, segmentId }, 'reset-request-ignored');
      // The row differs from this mirror (a pending reset, another segment): read it again.
      this.flagsStale = true;
      return false;
    }
    // This request is the pending one now: its reason (or none) replaces any earlier one.
    this.resetReason = reason ? { segmentId: segmentId ?? this.context.segment.id, reason } : null;
    this.changeRecord({ resetRequested: true });
    this.pump();
    return true;
  }

  /** A person acted (a message, a resume): what failed for good is tried again. */
  private personActed(): void {
    this.personActs += 1;
    this.failed.clear();
    this.tooLongRetried = false; // R19: a call refused as too long gets a reset and a retry again
  }

  /** Stops taking work; a running drive stops at its next checkpoint. Resolves when quiet. */
  async stop(graceMs = 25_000): Promise<void> {
    await this.scheduler.stop(graceMs);
    this.lifetime.abort(new Error('shutdown'));
    await Promise.race([Promise.all([this.scheduler.whenIdle(), this.memory.settle()]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    await this.lease.release().catch((error: unknown) => this.deps.log.warn({ sessionId: this.record.id, err: String(error) }, 'lease-release-failed'));
  }

  /** Resolves when the current drive or reset (and any that follows from it) is over. */
  whenIdle(): Promise<void> {
    return this.scheduler.whenIdle();
  }

  private pump(): void {
    this.scheduler.pump();
  }

  /**
   * The state machine: what runs next, asked by the scheduler whenever nothing runs. A pending
   * reset comes first, then a pause, then a drive if work is pending, then a requested memory run;
   * an activity that failed for good waits for a person.
   */
  private nextActivity(): Activity | null {
    const { resetRequested, pauseRequested, paused } = this.record;
    // R6: never a reset inside a tool batch: a crashed turn's pending calls are answered first (a
    // started one "interrupted", R12), and that drive stops for the reset at the checkpoint right
    // after them. Tried once per segment, so a drive that cannot close it cannot loop; a paused
    // session closes it when resumed.
    const closeBatch = resetRequested && this.batchClosingTried !== this.context.segment.id && this.context.tail() === 'tools-pending';
    if (resetRequested && !closeBatch) return this.failed.has('reset') ? null : { kind: 'reset', work: () => this.performReset() };
    if (pauseRequested && !closeBatch) return this.failed.has('pause') ? null : { kind: 'pause', work: () => this.enterPaused() };
    if ((this.workPending || closeBatch) && !paused && !this.failed.has('drive')) {
      if (closeBatch) this.batchClosingTried = this.context.segment.id;
      this.workPending = false;
      return { kind: 'drive', work: () => this.drive() };
    }
    // A person's remember / forget (read from the store under the lease, prepare) is forked now,
    // after a running summarizer (R3).
    if (this.memory.requestsMayWait && !this.failed.has('memory')) return { kind: 'memory', work: () => this.forkRequestedSummary() };
    return null;
  }

  /**
   * The worker is idle: fork a requested summarizer from its context once no summarizer runs. A
   * context that stopped inside a tool batch is no place to fork from (nor for a marker, R9): the
   * next drive's checkpoint serves the request instead.
   */
  private async forkRequestedSummary(): Promise<void> {
    await this.slots.outside(() => this.memory.waitForSummarizer());
    if (this.context.tail() === 'tools-pending') {
      this.workPending = true;
      this.failed.add('memory'); // until a drive, a steer or another request: no loop here
      return;
    }
    await this.memory.forkRequested();
  }

  /**
   * The lease was just claimed for `kind`: brings this mirror up to date and says whether the
   * session's row still asks for the activity (false leaves the choice to the next pump).
   */
  private async prepare(kind: ActivityKind, claim: HeldClaim): Promise<boolean> {
    // Another replica may have written since this mirror was loaded (even a just-loaded runner
    // may have waited for the lease): re-read unless the lease stayed ours.
    if (claim === 'changed-hands') await this.reload();
    // Held all along, the lease saw every wake-up; otherwise a steer may have been stored while
    // this replica was not listening for them.
    if (claim !== 'held') this.steers.arrived();
    // The row is the truth: a reset or a pause this mirror remembers may have been carried out by
    // another replica since (R8, R11), so it is read again before acting on it.
    if (this.flagsStale || (claim !== 'changed-hands' && (kind === 'reset' || kind === 'pause'))) await this.refreshFlags();
    if (!(await this.stillAsked(kind))) return false;
    // A new session's first segment gets its init messages here, by the lease holder only (the
    // ones a failed attempt already stored are kept).
    const initStored = this.context.entries.filter((entry) => entry.isInit).length;
    if (initStored === this.context.entries.length) {
      const init = await buildInitMessages(this.deps, this.record);
      await this.context.appendInit(init.slice(initStored));
    }
    return true;
  }

  /**
   * Whether the session's row (just read) still asks for this activity; false leaves the choice
   * to pump. A reset is for the segment the row names: a mirror behind it is reloaded first.
   */
  private async stillAsked(kind: ActivityKind): Promise<boolean> {
    const { resetRequested, pauseRequested, paused, currentSegmentId } = this.record;
    switch (kind) {
      case 'drive':
        // A command on another replica asked for a reset or a pause: that comes first, except
        // that a crashed turn's tool batch is closed before a reset (pump).
        if (paused) return false;
        return resetRequested ? this.context.tail() === 'tools-pending' : !pauseRequested;
      case 'reset':
        if (resetRequested && currentSegmentId !== null && currentSegmentId !== this.context.segment.id) await this.reload();
        return this.record.resetRequested;
      case 'pause':
        return pauseRequested;
      case 'memory':
        await this.memory.loadRequests();
        return this.memory.summaryRequested;
    }
  }

  /** After the lease was given up: a steer that slipped in meanwhile is work again (not when paused). */
  private async workSlippedIn(): Promise<boolean> {
    if (this.record.paused || (await this.deps.stores.steers.countQueued(this.record.id)) === 0) return false;
    this.steers.arrived();
    this.workPending = true;
    return true;
  }

  /**
   * Re-reads the session and its context after another replica (or a storage failure) may have
   * changed them; memory runs that no live process runs any more are marked failed (R18).
   */
  private async reload(): Promise<void> {
    await this.refreshFlags();
    const { segment, messages } = await this.deps.stores.context.load(this.record.id);
    this.context.replace(segment, messages);
    const interrupted = await this.deps.stores.memoryRuns.failInterrupted(this.record.id, this.memory.runningIds);
    if (interrupted > 0) this.deps.log.warn({ sessionId: this.record.id, runs: interrupted }, 'memory-runs-interrupted');
    // People's requests: another replica may have carried out what waited here, and an
    // interrupted run hands its request back; the store says which wait.
    this.memory.rereadRequests();
    // The replica that held the lease may have died with answers or notes still owed.
    await this.redeliver();
  }

  /** Re-reads the session's flags after another replica may have changed them. */
  private async refreshFlags(): Promise<void> {
    this.flagsStale = false;
    // A row read while this runner changed its flags (a resume during a reset's claim) may predate
    // the change: read again rather than put the old flags back.
    for (;;) {
      const changes = this.localChanges;
      const session = await this.deps.stores.sessions.get(this.record.id);
      if (!session) return;
      if (changes === this.localChanges) {
        this.record = session;
        return;
      }
    }
  }

  /** Flags may have been changed by another replica while this one was not driving. */
  private async refreshUnlessDriving(): Promise<void> {
    if (!this.scheduler.busy) await this.refreshFlags();
  }

  private async drive(): Promise<void> {
    if (this.context.tail() === 'settled' && !this.steers.mayHaveQueued) return;
    // A session over its budget does not call the model; its messages wait for a raised budget.
    if ((await this.budget.check(this.record)).level === 'reached') return;
    const session = this.record;
    // A run starts when the loop finds work: a wake-up for steers already taken is no run.
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      this.deps.events.emit({ type: 'run-start', session });
    };
    let reason: StopReason;
    const actsAtStart = this.personActs;
    const signal = this.runStop.begin(this.lifetime.signal);
    try {
      reason = await runWorkerLoop({
        deps: this.deps,
        session: () => this.record,
        context: this.context,
        checkpoint: () => this.checkpoint(),
        steers: this.steers,
        onWork: start,
        waiting: (wait) => this.slots.outside(wait),
        onModelResponseStart: () => {
          this.tooLongRetried = false; // the provider took a call: a later refusal gets its own retry
          this.memory.workerPrefilled();
        },
        beforeModelCall: () => this.beforeWorkerCall(),
        onAnswerStored: () => this.changeRecord({ workerSteps: this.record.workerSteps + 1 }),
        onSteersTaken: () => this.changeRecord({ runStartStep: this.record.workerSteps }),
        fencingToken: () => this.lease.token,
        stoppedBy: () => this.runStop.stoppedBy,
        signal,
        approvals: {
          gate: this.approvals,
          shouldLeave: async () => {
            if (this.flagsStale) await this.refreshFlags();
            return this.record.pauseRequested || this.record.paused || this.lease.lost || this.scheduler.stopped;
          },
          leave: async () => {
            if (this.scheduler.stopped || signal.aborted) return 'shutdown';
            if (this.lease.lost) return 'lease-lost';
            await this.enterPaused();
            return 'paused';
          },
        },
      });
      if (reason === 'stopped') await this.enterStopped();
    } catch (error) {
      if (error instanceof ConflictError) {
        // Another replica wrote this session (our lease lapsed): stop quietly; reload next time.
        this.deps.log.warn({ sessionId: session.id, err: error.message }, 'run-superseded');
        this.lease.forget();
        if (started) this.deps.events.emit({ type: 'run-end', session: this.record, reason: 'lease-lost' });
        return;
      }
      if (isTransient(error) && !this.scheduler.stopped) {
        // Waited out by the scheduler; the card says the run stalls and will go on by itself.
        if (started) this.deps.events.emit({ type: 'run-end', session: this.record, reason: 'storage' });
        throw error;
      }
      start();
      reason = this.scheduler.stopped ? 'shutdown' : 'error';
      if (error instanceof ContextTooLongError && !this.scheduler.stopped && !this.tooLongRetried && (await this.resetForTooLong(error))) {
        reason = 'reset';
      } else if (!this.scheduler.stopped) {
        // A message said while this drive failed, and not taken by it, is heard: the next drive
        // takes it (once per message or command, so no loop); otherwise the session waits for a person.
        if (this.personActs === actsAtStart || !(await this.steersQueued())) this.failed.add('drive');
        this.deps.log.error({ sessionId: session.id, err: error instanceof Error ? error.message : String(error) }, 'run-failed');
        this.emitError(error);
      }
    }
    const stoppedBy = this.runStop.end();
    if (started) this.deps.events.emit({ type: 'run-end', session: this.record, reason, ...(reason === 'stopped' && stoppedBy !== null ? { stoppedBy } : {}) });
  }

  /** Whether messages wait in the queue (false when the database cannot say). */
  private async steersQueued(): Promise<boolean> {
    return (await this.deps.stores.steers.countQueued(this.record.id).catch(() => 0)) > 0;
  }

  /**
   * After a Stop the session waits like a paused one, unless someone resumed it meanwhile (a
   * steer or resume that came while the stop was under way wins).
   */
  private async enterStopped(): Promise<void> {
    await this.refreshFlags();
    const resumed = !this.record.pauseRequested && !this.record.paused;
    await this.setFlags(resumed ? { stopRequestedBy: null } : { paused: true, pauseRequested: false, stopRequestedBy: null });
  }

  private emitError(error: unknown): void {
    const retryable = typeof error === 'object' && error !== null && 'retryable' in error ? Boolean(error.retryable) : false;
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'internal';
    const message = error instanceof Error ? error.message : String(error);
    this.deps.events.emit({ type: 'error', session: this.record, error: { code, message, retryable } });
  }

  /** The two safe points: memory trigger first, then the reset/pause/shutdown gate. */
  private async checkpoint(): Promise<StopReason | null> {
    this.scheduler.touch();
    if (this.runStop.stoppedBy !== null) return 'stopped';
    if (this.flagsStale) await this.refreshFlags();
    // A spend cap reached: memory work stops first (nothing forks) and the worker stops here.
    if ((await this.budget.check(this.record)).level === 'reached') {
      await this.memory.onCheckpoint({ fork: false });
      return 'budget';
    }
    // R6: with a reset pending nothing new is forked (its marker would cut the step in flight,
    // R3), but the step is consumed.
    const resetPending = this.record.resetRequested;
    await this.memory.onCheckpoint({ fork: !resetPending });
    // R19: forked first (the summarizer covers the full context), then the system's own reset.
    await this.resetIfFull();
    if (this.record.resetRequested && this.mustStopForReset()) return 'reset';
    if (this.record.pauseRequested || this.record.paused) {
      await this.enterPaused();
      return 'paused';
    }
    if (this.scheduler.stopped) return 'shutdown';
    if (this.lease.lost) return 'lease-lost';
    return null;
  }

  /**
   * R19: the provider refused the worker's call as longer than its window (smaller than
   * MODEL_CONTEXT_WINDOW): the session resets and the call is tried once more after the reset.
   * False when no reset could be asked for (the error then fails the drive as any other).
   */
  private async resetForTooLong(error: ContextTooLongError): Promise<boolean> {
    this.tooLongRetried = true;
    this.deps.log.warn({ sessionId: this.record.id, err: error.message }, 'context-too-long-reset');
    if (this.record.resetRequested) return true;
    return this.requestReset(this.context.segment.id, { reason: 'context-full' });
  }

  /** R19: the next worker call reaches the hard limit (measured as R2 measures it). */
  private atHardLimit(): boolean {
    const { settings } = this.deps;
    return this.context.nextCallTokens() * 100 >= settings.hardLimitPercent * settings.contextWindow;
  }

  /**
   * R19: at the hard limit with no reset pending, the system asks for the reset itself, as if the
   * decider had said reset; R6 then applies (the worker goes on while a summarizer runs).
   */
  private async resetIfFull(): Promise<void> {
    if (this.record.resetRequested || !this.atHardLimit() || this.fullAtStart === this.context.segment.id) return;
    this.deps.log.warn({ sessionId: this.record.id, tokens: this.context.nextCallTokens() }, 'context-full');
    await this.requestReset(this.context.segment.id, { reason: 'context-full' });
  }

  /**
   * Before each worker call (a steer taken at the start of a drive passes no checkpoint): at the
   * hard limit the reset comes first, unless R6 lets the worker go on while a summarizer runs.
   * R21: a run that took its steps stops here, after its last batch's checkpoint and after the
   * steers that came meanwhile were taken (a reply there begins a new run instead): as if paused,
   * with a note. With a reset pending it stops for the reset first; the limit holds after it.
   */
  private async beforeWorkerCall(): Promise<StopReason | null> {
    await this.resetIfFull();
    if (this.record.resetRequested && this.mustStopForReset()) return 'reset';
    if (!this.steps.reached(this.record)) return null;
    if (this.record.resetRequested) return 'reset';
    await this.enterPaused();
    this.steps.stopped(this.record);
    return 'step-limit';
  }

  /**
   * R6: the worker never waits for memory: while a summarizer runs it goes on (taking no steer
   * message), and stops for the reset at the first checkpoint where none runs, or when the
   * context passed the limit (then the reset waits for the summarizer).
   */
  private mustStopForReset(): boolean {
    if (!this.memory.summarizerRunning) return true;
    const { settings } = this.deps;
    return this.context.nextCallTokens() * 100 >= settings.resetWaitPercent * settings.contextWindow;
  }

  /** A person allowed `usd` more: the session's cap (and today's channel cap, when set) grows, and work goes on. */
  async raiseBudget(usd: number): Promise<void> {
    this.changeRecord({ budgetUsd: await this.budget.raise(this.record, usd) });
    this.failed.clear();
    this.workPending = true;
    this.steers.arrived();
    this.pump();
  }

  private async enterPaused(): Promise<void> {
    // A Stop that found nothing running ends here too.
    await this.setFlags({ paused: true, pauseRequested: false, stopRequestedBy: null });
    this.deps.events.emit({ type: 'paused', session: this.record });
  }

  /** R6, R7: the worker is stopped (or idle). A person's pause survives; backlog drives on. */
  private async performReset(): Promise<void> {
    // Only an idle worker, or one past the limit, gets here with a summarizer running: that wait
    // holds no slot.
    await this.slots.outside(() => this.memory.waitForSummarizer());
    // The reason this runner stored is for this segment's reset only (R19).
    const reason = this.resetReason?.segmentId === this.context.segment.id ? this.resetReason.reason : null;
    try {
      const outcome = await resetContext(this.deps, this.record, this.context, {
        ...(reason ? { reason } : {}),
        // R20: a carry-over too big even with stubs gets a summarizer over it, and the reset waits.
        summarize: () => this.slots.outside(() => this.memory.summarizeForCarryOver()),
      });
      this.changeRecord({ resetRequested: false, currentSegmentId: this.context.segment.id });
      const { settings } = this.deps;
      if (outcome.tokensAfter * 100 >= settings.hardLimitPercent * settings.contextWindow) this.fullAtStart = this.context.segment.id;
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      // Another replica reset this segment first (R8): take its state.
      this.lease.forget();
      await this.reload();
    }
    this.resetReason = null;
    // A drive that failed before (say, a call refused as too long) gets a new context to try in.
    this.failed.delete('drive');
    this.workPending = true;
  }

  private async setFlags(flags: Partial<Pick<SessionRecord, 'paused' | 'pauseRequested' | 'resetRequested' | 'stopRequestedBy' | 'runStartStep'>>): Promise<void> {
    await this.deps.stores.sessions.setFlags(this.record.id, flags);
    this.changeRecord(flags);
  }

  /** Applies a change this runner made to the session's row (counted: see refreshFlags). */
  private changeRecord(patch: Partial<SessionRecord>): void {
    this.record = { ...this.record, ...patch };
    this.localChanges += 1;
  }
}
