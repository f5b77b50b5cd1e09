// R18: how a memory run ends. Its outcome is stored with back-off while the database is away; a
// run that fails (model, time cap, database, crash) is marked failed, logged and counted, and never
// stops the worker; a fork whose first request would not fit the window is skipped (R19). The
// outcomes this process saw tell a later fork which markers count (R4).
import type { AgentDeps } from '../agent-context.js';
import { retryTransient } from '../retry.js';
import type { MemoryRunRecord, PersonRequest, SessionRecord } from '../store.js';
import type { DeciderResult } from './decider.js';
import { ForkTooLongError } from './fork-loop.js';
import { changeCounts, memoryRunChanges } from '../memory-run-changes.js';
import { summarizerNote, type MemoryRunResult } from './summarizer.js';

/** How long a finished run's outcome may take to be stored while the database is away (ms). */
const finishBudgetMs = 120_000;

/** What a run's record holds when it ends (MemoryRunStore.finish). */
type RunEnd = Parameters<AgentDeps['stores']['memoryRuns']['finish']>[1];

export class RunOutcomes {
  /** Outcomes of summarizer runs of this process, so a fork knows which markers count (R4). */
  readonly statuses = new Map<string, MemoryRunRecord['status']>();
  /** Failures still being recorded in the background (settle waits for them). */
  private readonly recording = new Set<Promise<void>>();

  constructor(
    private readonly deps: AgentDeps,
    /** Aborted when the session shuts down. */
    private readonly signal: AbortSignal,
  ) {}

  /** Failures still being recorded. */
  get pending(): Array<Promise<void>> {
    return [...this.recording];
  }

  /**
   * A summarizer succeeded: its record stored, and a note owed when memory changed or a person
   * asked (they hear back either way); the mark keeps it owed across a crash until delivered.
   */
  async summarizerSucceeded(session: SessionRecord, memoryRunId: string, round: number, result: MemoryRunResult, request: PersonRequest | undefined): Promise<void> {
    this.statuses.set(memoryRunId, 'succeeded');
    const changes = (await retryTransient(() => memoryRunChanges(this.deps.stores.documents, memoryRunId), this.retryOptions(memoryRunId))).map(changeCounts);
    // The final line is its versions' reason.
    const note = summarizerNote(result.transcript);
    const owed = changes.length > 0 || request !== undefined;
    await this.finish(memoryRunId, { status: 'succeeded', transcript: result.transcript, usage: result.usage, awaitingDelivery: owed, ...(note ? { note } : {}) });
    this.deps.log.info({ sessionId: session.id, memoryRunId, documents: changes.length }, 'summary-end');
    this.deps.events.emit({ type: 'memory-run-end', session, role: 'summarizer', memoryRunId, status: 'succeeded' });
    if (owed) {
      this.deps.events.emit({ type: 'memory-updated', session, memoryRunId, round, changes, usage: result.usage, note, ...(request ? { request } : {}) });
    }
  }

  /**
   * A decider answered. The decision is acted on even if its record cannot be written yet (R18:
   * memory work fails alone; the reset request retries by itself).
   */
  async deciderSucceeded(session: SessionRecord, memoryRunId: string, result: DeciderResult, requestReset: () => Promise<void>): Promise<void> {
    const decision = result.reset ? 'reset' : 'keep';
    this.deps.log.info({ sessionId: session.id, memoryRunId, reset: result.reset }, 'decider-end');
    const recorded = this.finish(memoryRunId, { status: 'succeeded', decision, transcript: result.transcript, usage: result.usage });
    if (result.reset) await requestReset();
    await recorded;
    this.deps.events.emit({ type: 'memory-run-end', session, role: 'decider', memoryRunId, status: 'succeeded', decision });
  }

  /** A run failed (or was skipped, R19): logged, counted, and recorded in the background. */
  failed(session: SessionRecord, role: 'summarizer' | 'decider', memoryRunId: string, error: unknown, request?: PersonRequest): void {
    // R19: a fork whose first request would not fit the window was never sent: skipped, not failed
    // (either way its marker does not count, so the next run covers its range, R4).
    const status = error instanceof ForkTooLongError && error.firstCall ? 'skipped' : 'failed';
    this.statuses.set(memoryRunId, status);
    const message = error instanceof Error ? error.message : String(error);
    const partial = (error ?? {}) as Partial<MemoryRunResult>;
    if (status === 'skipped') this.deps.log.warn({ sessionId: session.id, memoryRunId, role, err: message }, 'memory-run-skipped');
    else {
      this.deps.log.error({ sessionId: session.id, memoryRunId, role, err: message }, 'memory-run-failed');
      this.deps.events.emit({ type: 'memory-run-failed', session, role, memoryRunId, error: message });
    }
    this.deps.events.emit({ type: 'memory-run-end', session, role, memoryRunId, status });
    // Recorded in the background: the run is over now (a reset waiting for it need not wait for
    // the database), and a row left "running" counts as not succeeded anyway.
    // A person's request whose run the shutdown cut short waits for the next driver (its note
    // never came); one whose run failed by itself is not tried again in a loop.
    const eventId = this.signal.aborted ? request?.eventId : undefined;
    const handedBack = eventId === undefined ? Promise.resolve() : this.deps.stores.reviews.handBack(eventId, memoryRunId);
    const recorded = handedBack.then(() => this.finish(memoryRunId, {
      status, error: message, transcript: partial.transcript ?? [],
      usage: partial.usage ?? { promptTokens: 0, cachedTokens: 0, completionTokens: 0 },
    }))
      .catch((finishError: unknown) => this.deps.log.error({ sessionId: session.id, memoryRunId, err: String(finishError) }, 'memory-run-record-failed'))
      .finally(() => this.recording.delete(recorded));
    this.recording.add(recorded);
  }

  /**
   * The run's promise with its last failure handled: whatever went wrong while recording the
   * outcome (the database stayed away past the budget) is logged, and the run ends. The store's
   * row may then still say "running": a later fork or load treats it as not succeeded (R4, R6).
   */
  settled(task: Promise<void>, session: SessionRecord, memoryRunId: string): Promise<void> {
    return task.catch((error: unknown) => {
      if (!this.statuses.has(memoryRunId)) this.statuses.set(memoryRunId, 'failed');
      this.deps.log.error({ sessionId: session.id, memoryRunId, err: String(error) }, 'memory-run-record-failed');
    });
  }

  /** Stores a run's outcome, retrying while the database is away. */
  private finish(memoryRunId: string, result: RunEnd): Promise<void> {
    return retryTransient(() => this.deps.stores.memoryRuns.finish(memoryRunId, result), this.retryOptions(memoryRunId));
  }

  private retryOptions(memoryRunId: string) {
    return {
      budgetMs: finishBudgetMs,
      signal: this.signal,
      onRetry: (error: unknown, attempt: number, waitMs: number) => this.deps.log.warn({ memoryRunId, attempt, waitMs, err: String(error) }, 'memory-run-store-retry'),
    };
  }
}
