// R2/R3: at every checkpoint, fork a summarizer (then place the marker) and a decider when the
// context crossed a new step. The worker never awaits them; at most one of each runs at a time.
import type { AgentDeps } from './agent-context.js';
import { estimateTokens } from './context-window.js';
import { runDecider } from './decider.js';
import { forkRequest } from './fork.js';
import { mainDocumentPath } from './init-messages.js';
import type { LiveContext } from './live-context.js';
import { deciderInstruction, summarizerInstruction } from './memory-instructions.js';
import { changeCounts, memoryRunChanges } from './memory-run-changes.js';
import { markerText } from './prompts.js';
import type { ChatMessage } from './messages.js';
import type { SessionRecord } from './store.js';
import { runSummarizer, type MemoryRunResult } from './summarizer.js';
import { currentStep, shouldTrigger } from './trigger-policy.js';

/** What the memory manager needs from its session runner. */
export interface MemoryHost {
  session(): SessionRecord;
  context: LiveContext;
  /** Asks for a reset of `segmentId`; ignored when that segment already ended (R8). */
  requestReset(segmentId: string): void;
  /** Aborted when the session shuts down. */
  signal: AbortSignal;
}

export class MemoryManager {
  private summarizer: Promise<void> | null = null;
  private decider: Promise<void> | null = null;

  constructor(
    private readonly deps: AgentDeps,
    private readonly host: MemoryHost,
  ) {}

  /** True while a summarizer of this session runs. */
  get summarizerRunning(): boolean {
    return this.summarizer !== null;
  }

  /** R6: resolves when no summarizer runs (success or failure). */
  async waitForSummarizer(): Promise<void> {
    while (this.summarizer) await this.summarizer;
  }

  /** Resolves when neither role runs (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.summarizer || this.decider) await Promise.all([this.summarizer, this.decider]);
  }

  /**
   * The checkpoint hook: R2 trigger, R3 fork + marker. Never waits for the forks themselves; what
   * it waits for is one round of writes (the step, the runs, the marker), issued side by side.
   */
  async onCheckpoint(): Promise<void> {
    const { context } = this.host;
    const segment = context.segment;
    const tokens = context.lastPromptTokens ?? estimateTokens(context.messages);
    const step = currentStep(tokens, this.deps.settings.contextWindow, this.deps.settings.stepPercent);
    if (!shouldTrigger(step, segment.lastStep)) return;
    // The step is consumed even if nothing can be forked, and stored before a fork's first call.
    segment.lastStep = step;
    const writes: Array<Promise<unknown>> = [];
    // A fork sends its first request only once this checkpoint's writes are stored.
    let settleWrites: { resolve: () => void; reject: (error: unknown) => void } | undefined;
    const stored = new Promise<void>((resolve, reject) => (settleWrites = { resolve, reject }));
    stored.catch(() => undefined); // the failure reaches the worker below; forks fail with it too
    let snapshot = context.messages;
    if (!this.summarizer) {
      const marker = this.forkSummarizer(snapshot, stored, writes);
      snapshot = [...snapshot, marker]; // the decider, forked after the marker, sees it
    }
    if (!this.decider) this.forkDecider(snapshot, stored, writes);
    const { lastStep, summarizerRounds, deciderRounds } = segment;
    writes.push(this.deps.stores.context.updateSegment(segment.id, { lastStep, summarizerRounds, deciderRounds }));
    const all = Promise.all(writes);
    all.then(() => settleWrites?.resolve(), (error: unknown) => settleWrites?.reject(error));
    await all;
  }

  /** Starts a summarizer on `snapshot` and appends its marker; returns the marker message. */
  private forkSummarizer(snapshot: ChatMessage[], stored: Promise<void>, writes: Array<Promise<unknown>>): ChatMessage {
    const session = this.host.session();
    const { context } = this.host;
    const segment = context.segment;
    const round = segment.summarizerRounds + 1;
    segment.summarizerRounds = round;
    const runId = globalThis.crypto.randomUUID();
    writes.push(this.deps.stores.memoryRuns.start({
      id: runId, sessionId: session.id, segmentId: segment.id, role: 'summarizer', round, forkPoint: snapshot.length,
    }));
    this.deps.log.info({ sessionId: session.id, memoryRunId: runId, round, forkPoint: snapshot.length }, 'summary-start');
    const task = stored
      .then(async () => {
        // Built here, off the worker's path: the snapshot above is what the fork continues.
        const currentMain = round === 1 ? '' : ((await this.deps.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath }))?.content ?? '');
        const instruction = summarizerInstruction({ round, firstInSegment: round === 1, currentMain, stepCap: this.deps.settings.summarizerMaxSteps });
        return runSummarizer(this.deps, {
          sessionId: session.id, segmentId: segment.id, memorySpaceId: session.memorySpaceId, memoryRunId: runId,
          request: forkRequest(this.deps, session.id, snapshot, instruction), signal: this.host.signal,
        });
      })
      .then(
        (result) => this.summarizerSucceeded(session, runId, round, result),
        (error: unknown) => this.runFailed(session, 'summarizer', runId, error),
      );
    this.summarizer = task.finally(() => {
      this.summarizer = null;
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
    const request = forkRequest(this.deps, session.id, snapshot, deciderInstruction({ round }));
    const task = stored
      .then(() => runDecider(this.deps, { sessionId: session.id, segmentId: segment.id, memoryRunId: runId, request, signal: this.host.signal }))
      .then(
        async (result) => {
          await this.deps.stores.memoryRuns.finish(runId, {
            status: 'succeeded', decision: result.reset ? 'reset' : 'keep', transcript: result.transcript, usage: result.usage,
          });
          this.deps.log.info({ sessionId: session.id, memoryRunId: runId, reset: result.reset }, 'decider-end');
          this.deps.events.emit({ type: 'memory-run-end', session, role: 'decider', memoryRunId: runId, status: 'succeeded', decision: result.reset ? 'reset' : 'keep' });
          if (result.reset) this.host.requestReset(segment.id);
        },
        (error: unknown) => this.runFailed(session, 'decider', runId, error),
      );
    this.decider = task.finally(() => {
      this.decider = null;
    });
  }

  private async summarizerSucceeded(session: SessionRecord, memoryRunId: string, round: number, result: MemoryRunResult): Promise<void> {
    const changes = (await memoryRunChanges(this.deps.stores.documents, memoryRunId)).map(changeCounts);
    // A note is owed when memory changed; the mark keeps it owed across a crash until delivered.
    await this.deps.stores.memoryRuns.finish(memoryRunId, { status: 'succeeded', transcript: result.transcript, usage: result.usage, awaitingDelivery: changes.length > 0 });
    this.deps.log.info({ sessionId: session.id, memoryRunId, documents: changes.length }, 'summary-end');
    this.deps.events.emit({ type: 'memory-run-end', session, role: 'summarizer', memoryRunId, status: 'succeeded' });
    if (changes.length > 0) {
      this.deps.events.emit({ type: 'memory-updated', session, memoryRunId, round, changes, usage: result.usage });
    }
  }

  private async runFailed(session: SessionRecord, role: 'summarizer' | 'decider', memoryRunId: string, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    const partial = (error ?? {}) as Partial<MemoryRunResult>;
    this.deps.log.error({ sessionId: session.id, memoryRunId, role, err: message }, 'memory-run-failed');
    await this.deps.stores.memoryRuns
      .finish(memoryRunId, {
        status: 'failed', error: message, transcript: partial.transcript ?? [],
        usage: partial.usage ?? { promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
      })
      .catch((finishError: unknown) => this.deps.log.error({ memoryRunId, err: String(finishError) }, 'memory-run-finish-failed'));
    this.deps.events.emit({ type: 'memory-run-failed', session, role, memoryRunId, error: message });
    this.deps.events.emit({ type: 'memory-run-end', session, role, memoryRunId, status: 'failed' });
  }
}
