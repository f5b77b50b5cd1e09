// R2/R3: at every checkpoint, fork a summarizer (then place the marker) and a decider when the
// context crossed a new step. The worker never awaits them; at most one of each runs at a time.
// R18: every promise started here has a handler; how a run ends is run-outcomes.ts, what a
// summarizer is told besides its context is summarizer-brief.ts.
import type { AgentDeps } from '../agent-context.js';
import type { LiveContext } from '../loop/live-context.js';
import type { ChatMessage } from '../messages.js';
import { deciderInstruction, summarizerInstruction } from '../prompts/memory-instructions.js';
import { markerText } from '../prompts/prompts.js';
import type { PersonRequest, SegmentRecord, SessionRecord } from '../store.js';
import { runDecider } from './decider.js';
import { forkRequest } from './fork.js';
import { PersonRequests } from './person-requests.js';
import { RunOutcomes } from './run-outcomes.js';
import { forkPoint, readMainState, readNewToMemory, readReviewBrief } from './summarizer-brief.js';
import { runSummarizer } from './summarizer.js';
import { currentStep, shouldTrigger } from './trigger-policy.js';

/** What the memory manager needs from its session runner. */
export interface MemoryHost {
  session(): SessionRecord;
  context: LiveContext;
  /** Asks for a reset of `segmentId`; ignored when that segment already ended (R8). Never rejects. */
  requestReset(segmentId: string): Promise<void>;
  /** Aborted when the session shuts down. */
  signal: AbortSignal;
  /** No memory run of this process is live any more (the runner may give up its lease now). */
  memoryIdle(): void;
}

/** A run this process started and has not seen end. */
interface RunningRun {
  id: string;
  segmentId: string;
  done: Promise<void>;
  /** The review event of the person's request it carries, if any. */
  requestEventId?: number | undefined;
}

export class MemoryManager {
  private summarizer: RunningRun | null = null;
  private decider: RunningRun | null = null;
  /** How each run ends: recorded, logged, counted (R18); which markers count (R4). */
  private readonly outcomes: RunOutcomes;
  /** Resolved when the worker's next model call has been read by the provider, or it stopped. */
  private prefill: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Summarizer runs people asked for (remember / forget), served one per fork, oldest first. */
  private readonly requests: PersonRequests;
  /**
   * Every run of this process still live, the current ones and any of an earlier segment (a
   * decider running past a reset, R8): none of them is "interrupted", and each keeps the lease.
   */
  private readonly live = new Map<string, RunningRun>();

  constructor(
    private readonly deps: AgentDeps,
    private readonly host: MemoryHost,
  ) {
    this.requests = new PersonRequests(deps.stores.reviews, host.session().id);
    this.outcomes = new RunOutcomes(deps, host.signal);
  }

  /** True when no summarizer or decider of this process runs for the session. */
  get idle(): boolean {
    return this.live.size === 0;
  }

  /** True while a summarizer of this session runs. */
  get summarizerRunning(): boolean {
    return this.summarizer !== null;
  }

  /**
   * The worker's model call got its first chunk (the provider read and cached its prompt), or the
   * worker stopped: forks waiting to send their first request go now.
   */
  workerPrefilled(): void {
    this.prefill?.resolve();
    this.prefill = null;
  }

  /** When a fork may send its first request (fork prefix reuse: see forkAfterWorkerPrefillMs). */
  private afterWorkerPrefill(): Promise<void> {
    const limit = this.deps.settings.forkAfterWorkerPrefillMs;
    if (limit <= 0) return Promise.resolve();
    if (!this.prefill) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((done) => (resolve = done));
      this.prefill = { promise, resolve };
    }
    return Promise.race([this.prefill.promise, new Promise<void>((done) => setTimeout(done, limit).unref())]);
  }

  /** Ids of the runs this process is running (they are not interrupted, whatever the store says). */
  get runningIds(): string[] {
    return [...this.live.keys()];
  }

  /** R6: resolves when no summarizer runs (success or failure; it never rejects). */
  async waitForSummarizer(): Promise<void> {
    while (this.summarizer) await this.summarizer.done;
  }

  /** True while a person's request (remember / forget) read from the store waits for its summarizer run. */
  get summaryRequested(): boolean {
    return this.requests.waiting;
  }

  /** True when a person's request may wait, here or in the store (not read since noteRequests). */
  get requestsMayWait(): boolean {
    return this.requests.mayWait;
  }

  /**
   * A person's request may have been stored (said to any process) or handed back (its run was
   * interrupted): the store is read again before the next fork. Each is forked at the next
   * checkpoint where no summarizer runs, or by forkRequested when the worker is idle.
   */
  noteRequests(): void {
    this.requests.noteStored();
  }

  /** The lease changed hands: the requests queued here are read again from the store (the truth). */
  rereadRequests(): void {
    this.requests.forget();
  }

  /** Reads the requests waiting in the store, if it may hold new ones (only the lease holder forks them). */
  loadRequests(): Promise<void> {
    const taken = new Set([...this.live.values()].flatMap((run) => (run.requestEventId === undefined ? [] : [run.requestEventId])));
    return this.requests.load(taken);
  }

  /**
   * Forks the summarizer for the oldest waiting request from the context as it is (the worker is
   * idle at a safe point: the caller checked); false when a summarizer runs or none is waiting.
   */
  async forkRequested(): Promise<boolean> {
    if (this.summarizer || !this.requests.waiting) return false;
    await this.forkWithWrites(false, true);
    return true;
  }

  /**
   * R20: the carry-over of a reset does not fit its budget: a summarizer is forked over the whole
   * context (the worker is stopped at a safe point) and this resolves when it ended, either way.
   */
  async summarizeForCarryOver(): Promise<void> {
    await this.waitForSummarizer();
    await this.forkWithWrites(false, true);
    this.workerPrefilled(); // no worker call is coming: the fork goes at once
    await this.waitForSummarizer();
  }

  /** Resolves when neither role runs (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.live.size > 0 || this.outcomes.pending.length > 0) await Promise.all([...[...this.live.values()].map((run) => run.done), ...this.outcomes.pending]);
  }

  /**
   * The checkpoint hook: R2 trigger, R3 fork + marker. Never waits for the forks themselves; what
   * it waits for is one round of writes (the step, the runs, the marker), issued side by side.
   * With `fork: false` (a reset is pending, R6) the step is consumed and nothing is forked.
   */
  async onCheckpoint(options: { fork: boolean }): Promise<void> {
    const { context } = this.host;
    const segment = context.segment;
    const step = currentStep(context.nextCallTokens(), this.deps.settings.contextWindow, this.deps.settings.stepPercent);
    const triggered = shouldTrigger(step, segment.lastStep);
    // A person's request forks a summarizer at the first checkpoint where none runs, step or not
    // (one said to another process is read here once it was announced, noteRequests).
    if (options.fork && !this.summarizer) await this.loadRequests();
    const requested = options.fork && this.requests.waiting && !this.summarizer;
    if (!triggered && !requested) return;
    const { lastStep, deciderDueIn } = segment;
    // The step is consumed even if nothing can be forked, and stored before a fork's first call;
    // so is the decider policy's count (a step passed while a decider runs counts too).
    const due = triggered && this.deciderDue(step, segment);
    if (triggered) segment.lastStep = step;
    try {
      // R3: one decider at a time; one of an earlier segment (still running past a reset) neither
      // counts nor blocks.
      const decider = options.fork && due && this.decider?.segmentId !== segment.id;
      await this.forkWithWrites(decider, options.fork);
    } catch (error) {
      if (context.segment === segment) Object.assign(segment, { lastStep, deciderDueIn });
      throw error;
    }
  }

  /**
   * Forks what is due (a summarizer unless one runs; a decider when `decider`) and waits for one
   * round of writes issued side by side: the segment's counters, the runs, the marker.
   */
  private async forkWithWrites(decider: boolean, summarizer: boolean): Promise<void> {
    const { context } = this.host;
    const segment = context.segment;
    const before = { summarizerRounds: segment.summarizerRounds, deciderRounds: segment.deciderRounds };
    const writes: Array<Promise<unknown>> = [];
    // A fork sends its first request only once this checkpoint's writes are stored.
    let settleWrites: { resolve: () => void; reject: (error: unknown) => void } | undefined;
    const stored = new Promise<void>((resolve, reject) => (settleWrites = { resolve, reject }));
    stored.catch(() => undefined); // the failure reaches the worker below; forks fail with it too
    let snapshot = context.messages;
    if (summarizer && !this.summarizer) {
      const marker = this.forkSummarizer(snapshot, stored, writes, this.requests.shift());
      snapshot = [...snapshot, marker]; // the decider, forked after the marker, sees it
    }
    if (decider) this.forkDecider(snapshot, stored, writes);
    const { lastStep, summarizerRounds, deciderRounds, deciderDueIn } = segment;
    writes.push(this.deps.stores.context.updateSegment(segment.id, { lastStep, summarizerRounds, deciderRounds, deciderDueIn }));
    const all = Promise.all(writes);
    all.then(() => settleWrites?.resolve(), (error: unknown) => settleWrites?.reject(error));
    try {
      await all;
    } catch (error) {
      // The counters stay as stored (the runner reloads after a storage failure anyway).
      if (context.segment === segment) Object.assign(segment, before);
      throw error;
    }
  }

  /**
   * The decider policy: no decider below the floor; above it, one every `deciderEvery` triggered
   * steps (the first step over the floor is due). Counts on the segment (stored with the step), so
   * a restart or another replica goes on counting where this one stopped.
   */
  private deciderDue(step: number, segment: SegmentRecord): boolean {
    const { deciderFloorPercent, deciderEvery } = this.deps.settings;
    if (step < deciderFloorPercent) return false;
    if (segment.deciderDueIn > 0) {
      segment.deciderDueIn -= 1;
      return false;
    }
    segment.deciderDueIn = Math.max(0, deciderEvery - 1);
    return true;
  }

  /**
   * Starts a summarizer on `snapshot` and appends its marker; returns the marker message.
   * `request`: a person asked for this run (remember / forget).
   */
  private forkSummarizer(snapshot: ChatMessage[], stored: Promise<void>, writes: Array<Promise<unknown>>, request?: PersonRequest): ChatMessage {
    const session = this.host.session();
    const { context } = this.host;
    const segment = context.segment;
    const round = segment.summarizerRounds + 1;
    segment.summarizerRounds = round;
    const runId = globalThis.crypto.randomUUID();
    // Which markers count is decided now, from the context as forked (its own marker comes after).
    const { markers, initMain } = forkPoint(context.entries);
    const contextTokens = context.nextCallTokens();
    writes.push(this.deps.stores.memoryRuns.start({
      id: runId, sessionId: session.id, segmentId: segment.id, role: 'summarizer', round, forkPoint: snapshot.length, ...(request ? { request } : {}),
    }));
    this.deps.log.info({ sessionId: session.id, memoryRunId: runId, round, forkPoint: snapshot.length, requested: request?.kind }, 'summary-start');
    this.deps.events.emit({ type: 'memory-run-start', session, role: 'summarizer', memoryRunId: runId, round });
    const prefilled = this.afterWorkerPrefill();
    // People's review events as they are now, at the fork, not after the prefill wait: one
    // recorded meanwhile belongs to the next run (a request: to its own run). A request an earlier
    // run of the space was given already is not carried out twice.
    const briefing = Promise.all([
      readReviewBrief(this.deps, session.memorySpaceId, request?.eventId),
      request?.eventId === undefined ? false : this.deps.stores.reviews.wasGiven(session.memorySpaceId, request.eventId),
    ]);
    briefing.catch(() => undefined); // awaited below: a failure fails the run there
    const task = stored
      .then(async () => {
        await prefilled;
        // Built here, off the worker's path: the snapshot above is what the fork continues.
        const [newToMemory, main, [review, requestGiven]] = await Promise.all([readNewToMemory(this.deps, this.outcomes.statuses, markers), readMainState(this.deps, session, initMain), briefing]);
        // A run that succeeds has seen these events; the next one is given only newer ones.
        const newest = review.events.at(-1)?.id ?? request?.eventId;
        if (newest !== undefined) await this.deps.stores.reviews.markGiven(runId, Math.max(newest, request?.eventId ?? 0));
        const instruction = summarizerInstruction({
          round, newToMemory, main, review, ...(request ? { request, requestGiven } : {}),
        });
        return runSummarizer(this.deps, {
          sessionId: session.id, segmentId: segment.id, memorySpaceId: session.memorySpaceId, memoryRunId: runId,
          request: forkRequest(this.deps, session.id, snapshot, instruction), contextTokens, signal: this.host.signal,
        });
      })
      .then(
        (result) => this.outcomes.summarizerSucceeded(session, runId, round, result, request),
        (error: unknown) => this.outcomes.failed(session, 'summarizer', runId, error, request),
      );
    const run: RunningRun = { id: runId, segmentId: segment.id, done: this.outcomes.settled(task, session, runId), requestEventId: request?.eventId };
    this.summarizer = run;
    this.live.set(runId, run);
    void run.done.finally(() => {
      if (this.summarizer === run) this.summarizer = null;
      this.live.delete(runId);
      if (this.idle) this.host.memoryIdle();
    });
    const marker: ChatMessage = { role: 'user', content: markerText(round) };
    writes.push(context.append(marker, { isMarker: true, memoryRunId: runId }));
    return marker;
  }

  private forkDecider(snapshot: ChatMessage[], stored: Promise<void>, writes: Array<Promise<unknown>>): void {
    const session = this.host.session();
    const segment = this.host.context.segment;
    const round = segment.deciderRounds + 1;
    segment.deciderRounds = round;
    const runId = globalThis.crypto.randomUUID();
    writes.push(this.deps.stores.memoryRuns.start({
      id: runId, sessionId: session.id, segmentId: segment.id, role: 'decider', round, forkPoint: snapshot.length,
    }));
    this.deps.events.emit({ type: 'memory-run-start', session, role: 'decider', memoryRunId: runId, round });
    // Cheaper deciders: a short answer, and as little reasoning as the provider allows.
    const request = { ...forkRequest(this.deps, session.id, snapshot, deciderInstruction({ round })), maxOutputTokens: this.deps.settings.deciderMaxOutputTokens, minimalReasoning: true };
    // Measured with the summarizer's marker, which this snapshot ends with.
    const contextTokens = this.host.context.nextCallTokens();
    const prefilled = this.afterWorkerPrefill();
    const task = stored
      .then(() => prefilled)
      .then(() => runDecider(this.deps, { sessionId: session.id, segmentId: segment.id, memoryRunId: runId, request, contextTokens, signal: this.host.signal }))
      .then(
        (result) => this.outcomes.deciderSucceeded(session, runId, result, () => this.host.requestReset(segment.id)),
        (error: unknown) => this.outcomes.failed(session, 'decider', runId, error),
      );
    const run: RunningRun = { id: runId, segmentId: segment.id, done: this.outcomes.settled(task, session, runId) };
    this.decider = run;
    this.live.set(runId, run);
    void run.done.finally(() => {
      if (this.decider === run) this.decider = null;
      this.live.delete(runId);
      if (this.idle) this.host.memoryIdle();
    });
  }
}
