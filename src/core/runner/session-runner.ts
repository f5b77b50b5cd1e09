// One runner per session (R10): it alone drives the worker loop, takes pause/resume requests from
// people (R11), and coordinates resets with the worker (R6–R8). It decides what the next activity
// is (nextActivity: reset, pause, drive or a requested memory fork) and what each does; its
// ActivityScheduler runs them one at a time, under the lease, retried through storage outages.
// The mechanisms stand beside it: its copy of the session's row (session-mirror.ts), staying in
// step with other replicas (session-sync.ts), asking for a reset (reset-requests.ts), R19's hard
// limit (hard-limit.ts), people's pause, Stop and resume (pause-control.ts) and one drive of the
// worker (drive.ts).
import type { AgentDeps } from '../agent-context.js';
import { ConflictError, NotFoundError, ShutdownRequested } from '../errors.js';
import { saveAttachments } from '../loop/attachments.js';
import { estimateTokens } from '../loop/context-window.js';
import { LiveContext } from '../loop/live-context.js';
import { SteerInbox } from '../loop/steer-inbox.js';
import { MemoryManager } from '../memory/memory-manager.js';
import { resetContext } from '../memory/reset.js';
import { steerMessage } from '../prompts/prompts.js';
import type { SessionRecord, SteerRecord } from '../store.js';
import { ApprovalGate } from '../loop/approval-gate.js';
import { ActivityScheduler, type Activity, type ActivityKind } from './activity-scheduler.js';
import { approvalWait } from './approval-wait.js';
import { drive, errorEvent } from './drive.js';
import { HardLimit } from './hard-limit.js';
import type { LeaseHeartbeat } from './lease-heartbeat.js';
import { LeaseKeeper } from './lease-keeper.js';
import { PauseControl } from './pause-control.js';
import { redeliver } from './redelivery.js';
import { ResetRequests, type ResetReason } from './reset-requests.js';
import { RunStop } from './run-stop.js';
import { SafePoints } from './safe-points.js';
import { SessionBudget } from './session-budget.js';
import type { BudgetState } from '../spend.js';
import { SessionMirror } from './session-mirror.js';
import { SessionSync } from './session-sync.js';
import { StepLimit } from './step-limit.js';
import { StorageOutage } from './storage-outage.js';
import type { WorkSlots } from './work-slots.js';

export type RunnerState = 'idle' | 'running' | 'paused' | 'resetting' | 'failed';

export class SessionRunner {
  readonly memory: MemoryManager;
  /** Runs the activities this runner decides on: one at a time, under the lease, retried. */
  private readonly scheduler: ActivityScheduler;
  /** Activities that failed for good and wait for a person (the scheduler's; cleared here). */
  private readonly failed: Set<ActivityKind>;
  /** Something may have given the worker work since the last drive began (steer, resume, reset). */
  private workPending = false;
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
  /** One driver across replicas: every activity runs under the session's lease. */
  readonly lease: LeaseKeeper;
  readonly steers: SteerInbox;
  /** The session's row as this runner knows it (the row itself is the truth, R8). */
  private readonly mirror: SessionMirror;
  private readonly sync: SessionSync;
  private readonly resets: ResetRequests;
  private readonly hardLimit: HardLimit;
  private readonly pauses: PauseControl;
  private readonly safePoints: SafePoints;
  /** R23: tool calls of this session that wait for a person. */
  private readonly approvals: ApprovalGate;
  /** Counts people's messages and commands (personActed): one that came during a failing drive is work after it. */
  private personActs = 0;
  private readonly workFound = (): void => {
    this.workPending = true;
  };

  private constructor(
    private readonly deps: AgentDeps,
    record: SessionRecord,
    readonly context: LiveContext,
    /** Activities hold one of the process's slots, except while they wait on a model or tool. */
    private readonly slots: WorkSlots,
    heartbeat: LeaseHeartbeat,
  ) {
    this.lease = new LeaseKeeper(deps.replica.leases, record.id, deps.replica.owner, deps.replica.leaseTtlMs, deps.log, deps.replica.role !== 'ingest', heartbeat);
    this.budget = new SessionBudget(deps);
    this.steps = new StepLimit(deps);
    this.outage = new StorageOutage(deps);
    this.mirror = new SessionMirror(deps.stores.sessions, record);
    this.approvals = new ApprovalGate(deps.approvals);
    const saver = deps.attachments;
    this.steers = new SteerInbox(
      context, record.id, (steer: SteerRecord, saved) => steerMessage(steer, saved),
      // Downloading waits on the network: it holds no work slot.
      saver ? (steers) => this.slots.outside(() => saveAttachments(saver, this.session, steers, this.lifetime.signal)) : undefined,
    );
    this.memory = new MemoryManager(deps, {
      session: () => this.session,
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
      session: () => this.session,
      next: () => this.nextActivity(),
      prepare: (kind, claim) => this.sync.prepare(kind, claim),
      retryDrive: this.workFound,
      workSlippedIn: () => this.sync.workSlippedIn(),
      reportError: (error) => this.deps.events.emit(errorEvent(this.session, error)),
    });
    this.failed = this.scheduler.failed;
    this.sync = new SessionSync({
      deps, mirror: this.mirror, context, steers: this.steers, memory: this.memory,
      redeliver: () => this.redeliver(),
      workFound: this.workFound,
    });
    this.resets = new ResetRequests({
      deps, mirror: this.mirror, signal: this.lifetime.signal,
      segmentId: () => this.context.segment.id,
      stopped: () => this.scheduler.stopped,
      holdsLease: () => this.lease.token !== null,
      stored: () => this.pump(),
    });
    this.pauses = new PauseControl({
      deps, mirror: this.mirror, runStop: this.runStop, scheduler: this.scheduler,
      personActed: () => this.personActed(),
      workFound: this.workFound,
    });
    this.hardLimit = new HardLimit({ deps, context, session: () => this.session, requestReset: (segmentId, reason) => this.requestReset(segmentId, { reason }) });
    this.safePoints = new SafePoints({
      deps, mirror: this.mirror, context, memory: this.memory, budget: this.budget, steps: this.steps, hardLimit: this.hardLimit, runStop: this.runStop,
      touch: () => this.scheduler.touch(),
      shuttingDown: () => this.scheduler.stopped,
      leaseLost: () => this.lease.lost,
      enterPaused: () => this.pauses.enterPaused(),
    });
  }

  /** Loads a session's current segment (its init messages are written by the first activity). */
  static async load(deps: AgentDeps, sessionId: string, slots: WorkSlots, heartbeat: LeaseHeartbeat, seen?: SessionRecord): Promise<SessionRunner> {
    const session = seen?.id === sessionId ? seen : await deps.stores.sessions.get(sessionId);
    if (!session) throw new NotFoundError('session', sessionId);
    const { segment, messages } = await deps.stores.context.load(sessionId);
    const context = new LiveContext(deps.stores.context, segment, messages, estimateTokens(deps.tools.definitions));
    return new SessionRunner(deps, session, context, slots, heartbeat);
  }

  get session(): SessionRecord {
    return this.mirror.record;
  }

  /** When the runner last did anything (the registry evicts idle runners). */
  get lastActivityAt(): number {
    return this.scheduler.lastActivityAt;
  }

  get state(): RunnerState {
    const running = this.scheduler.running;
    if (running === 'reset' || this.session.resetRequested) return 'resetting';
    if (running === 'drive') return 'running';
    if (this.session.paused) return 'paused';
    return this.failed.size > 0 ? 'failed' : 'idle';
  }

  /** True when nothing runs: no drive, no reset, no memory run, no retry pending. */
  get quiet(): boolean {
    return !this.scheduler.busy && !this.memory.summarizerRunning && !this.outage.ongoing;
  }

  /** Emits again what the thread is still owed (R17); adapters deduplicate by idempotency key. */
  async redeliver(): Promise<number> {
    const notes = this.steps.redeliver(this.session) ? 1 : 0; // R21's note, when the session is paused at the limit
    return notes + (await redeliver(this.deps, this.session, { segmentId: this.context.segment.id, entries: this.context.entries }));
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
    this.mirror.stale = true;
    this.steers.arrived();
    this.workPending = true;
    if (this.scheduler.running === 'drive') this.pauses.readStopRequest();
    this.approvals.poke(); // a pause leaves a call that waits for a person
    if (this.scheduler.busy) return; // the running activity re-reads them at its next checkpoint
    this.mirror.refresh().then(
      () => this.pump(),
      (error: unknown) => this.deps.log.warn({ sessionId: this.session.id, err: String(error) }, 'flags-refresh-failed'),
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
    if (this.lease.token === null && !options.rowJustRead && !this.scheduler.busy) await this.mirror.refresh();
    this.personActed();
    this.workPending = true;
    if (this.session.paused || this.session.pauseRequested) {
      await this.resume();
      return;
    }
    this.pump();
  }

  /** R11: a person's pause, at the next checkpoint; at once when idle (pause-control.ts). */
  pause(): Promise<void> {
    return this.pauses.pause();
  }

  /** A person's Stop: what runs is cancelled now, then the session waits like a paused one. */
  stopNow(by: string): Promise<'stopping' | 'already-paused'> {
    return this.pauses.stopNow(by);
  }

  /** R11: clears the pause and continues with any backlog, without a new message. */
  resume(): Promise<void> {
    return this.pauses.resume();
  }

  /**
   * R6/R8: asks for a reset of the given segment (null: whichever is current, a person's reset);
   * true when it is now pending (reset-requests.ts: the row decides; never rejects).
   */
  async requestReset(segmentId: string | null = null, options: { byPerson?: boolean; /** R19: the system's own reset. */ reason?: ResetReason } = {}): Promise<boolean> {
    if (options.byPerson) this.failed.delete('reset');
    return this.resets.request(segmentId, options.reason ?? null);
  }

  /** A person acted (a message, a resume): what failed for good is tried again. */
  private personActed(): void {
    this.personActs += 1;
    this.failed.clear();
    this.hardLimit.callTaken(); // R19: a call refused as too long gets a reset and a retry again
  }

  /** Stops taking work; a running drive stops at its next checkpoint. Resolves when quiet. */
  async stop(graceMs = 25_000): Promise<void> {
    const stopping = this.scheduler.stop(graceMs);
    this.approvals.poke(); // R23: a call waiting for a person stays waiting for the next process, not for the grace
    await stopping;
    this.lifetime.abort(new ShutdownRequested());
    await Promise.race([Promise.all([this.scheduler.whenIdle(), this.memory.settle()]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    await this.lease.release().catch((error: unknown) => this.deps.log.warn({ sessionId: this.session.id, err: String(error) }, 'lease-release-failed'));
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
    const { resetRequested, pauseRequested, paused } = this.session;
    // R6: never a reset inside a tool batch: a crashed turn's pending calls are answered first (a
    // started one "interrupted", R12), and that drive stops for the reset at the checkpoint right
    // after them. Tried once per segment, so a drive that cannot close it cannot loop; a paused
    // session closes it when resumed.
    const closeBatch = resetRequested && this.batchClosingTried !== this.context.segment.id && this.context.tail() === 'tools-pending';
    if (resetRequested && !closeBatch) return this.failed.has('reset') ? null : { kind: 'reset', work: () => this.performReset() };
    if (pauseRequested && !closeBatch) return this.failed.has('pause') ? null : { kind: 'pause', work: () => this.pauses.enterPaused() };
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

  private drive(): Promise<void> {
    return drive({
      deps: this.deps, session: () => this.session, context: this.context, steers: this.steers,
      budget: this.budget, runStop: this.runStop, lease: this.lease, hardLimit: this.hardLimit, lifetime: this.lifetime.signal,
      checkpoint: () => this.safePoints.checkpoint(),
      beforeModelCall: () => this.safePoints.beforeWorkerCall(),
      waiting: (wait) => this.slots.outside(wait),
      onModelResponseStart: () => {
        this.hardLimit.callTaken(); // the provider took a call: a later refusal gets its own retry
        this.memory.workerPrefilled();
      },
      onAnswerStored: () => this.mirror.change({ workerSteps: this.session.workerSteps + 1 }),
      onSteersTaken: () => this.mirror.change({ runStartStep: this.session.workerSteps }),
      fencingToken: () => this.lease.token,
      shuttingDown: () => this.scheduler.stopped,
      personActs: () => this.personActs,
      failedForGood: () => this.failed.add('drive'),
      enterStopped: () => this.pauses.enterStopped(),
      approvals: approvalWait({ gate: this.approvals, mirror: this.mirror, lease: this.lease, shuttingDown: () => this.scheduler.stopped, enterPaused: () => this.pauses.enterPaused() }),
    });
  }

  /**
   * A person allowed `usd` more: the session's cap grows, and work goes on unless the channel's
   * daily cap (the operator's, never raised by a person) holds it. Returns where the session stands.
   */
  async raiseBudget(usd: number): Promise<BudgetState> {
    this.mirror.change({ budgetUsd: await this.budget.raise(this.session, usd) });
    this.failed.clear();
    this.workPending = true;
    this.steers.arrived();
    this.pump();
    return this.budget.check(this.session);
  }

  /** R6, R7: the worker is stopped (or idle). A person's pause survives; backlog drives on. */
  private async performReset(): Promise<void> {
    // Only an idle worker, or one past the limit, gets here with a summarizer running: that wait
    // holds no slot.
    await this.slots.outside(() => this.memory.waitForSummarizer());
    // The reason this runner stored is for this segment's reset only (R19).
    const reason = this.resets.reasonFor(this.context.segment.id);
    try {
      const outcome = await resetContext(this.deps, this.session, this.context, {
        ...(reason ? { reason } : {}),
        // R20: a carry-over too big even with stubs gets a summarizer over it, and the reset waits.
        summarize: () => this.slots.outside(() => this.memory.summarizeForCarryOver()),
      });
      this.mirror.change({ resetRequested: false, currentSegmentId: this.context.segment.id });
      this.hardLimit.segmentStarted(outcome.tokensAfter);
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      // Another replica reset this segment first (R8): take its state.
      this.lease.forget();
      await this.sync.reload();
    }
    this.resets.done();
    // A drive that failed before (say, a call refused as too long) gets a new context to try in.
    this.failed.delete('drive');
    this.workPending = true;
  }
}
