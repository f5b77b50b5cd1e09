// R2/R3: at every checkpoint, fork a summarizer (then place the marker) and a decider when the
// context crossed a new step. The worker never awaits them; at most one of each runs at a time.
import type { AgentDeps } from './agent-context.js';
import { estimateTokens } from './context-window.js';
import { runDecider } from './decider.js';
import type { DocumentChange } from './events.js';
import { forkRequest } from './fork.js';
import { mainDocumentPath } from './init-messages.js';
import { diffLines } from './line-diff.js';
import type { LiveContext } from './live-context.js';
import { deciderInstruction, summarizerInstruction } from './memory-instructions.js';
import { markerText } from './prompts.js';
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

  /** The checkpoint hook: R2 trigger, R3 fork + marker. Never waits for the forks themselves. */
  async onCheckpoint(): Promise<void> {
    const { context } = this.host;
    const segment = context.segment;
    const tokens = context.lastPromptTokens ?? estimateTokens(context.messages);
    const step = currentStep(tokens, this.deps.settings.contextWindow, this.deps.settings.stepPercent);
    if (!shouldTrigger(step, segment.lastStep)) return;
    // The step is stored before anything is forked, and consumed even if nothing can be forked.
    segment.lastStep = step;
    await this.deps.stores.context.updateSegment(segment.id, { lastStep: step });
    if (!this.summarizer) await this.forkSummarizer();
    if (!this.decider) await this.forkDecider();
  }

  private async forkSummarizer(): Promise<void> {
    const session = this.host.session();
    const { context } = this.host;
    const segment = context.segment;
    const snapshot = context.messages; // before the marker: the summarizer never sees its own
    const round = segment.summarizerRounds + 1;
    const run = await this.deps.stores.memoryRuns.start({
      sessionId: session.id, segmentId: segment.id, role: 'summarizer', round, forkPoint: snapshot.length,
    });
    segment.summarizerRounds = round;
    await this.deps.stores.context.updateSegment(segment.id, { summarizerRounds: round });
    const currentMain = round === 1 ? '' : ((await this.deps.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath }))?.content ?? '');
    const instruction = summarizerInstruction({
      round, firstInSegment: round === 1, currentMain, stepCap: this.deps.settings.summarizerMaxSteps,
    });
    const request = forkRequest(this.deps, session.id, snapshot, instruction);
    this.deps.log.info({ sessionId: session.id, memoryRunId: run.id, round, forkPoint: snapshot.length }, 'summary-start');
    const task = runSummarizer(this.deps, {
      sessionId: session.id, segmentId: segment.id, memorySpaceId: session.memorySpaceId, memoryRunId: run.id, request, signal: this.host.signal,
    }).then(
      (result) => this.summarizerSucceeded(session, run.id, round, result),
      (error: unknown) => this.runFailed(session, 'summarizer', run.id, error),
    );
    this.summarizer = task.finally(() => {
      this.summarizer = null;
    });
    await context.append({ role: 'user', content: markerText(round) }, { isMarker: true, memoryRunId: run.id });
  }

  private async forkDecider(): Promise<void> {
    const session = this.host.session();
    const { context } = this.host;
    const segment = context.segment;
    const snapshot = context.messages; // after the marker: the decider sees it
    const round = segment.deciderRounds + 1;
    const run = await this.deps.stores.memoryRuns.start({
      sessionId: session.id, segmentId: segment.id, role: 'decider', round, forkPoint: snapshot.length,
    });
    segment.deciderRounds = round;
    await this.deps.stores.context.updateSegment(segment.id, { deciderRounds: round });
    const request = forkRequest(this.deps, session.id, snapshot, deciderInstruction({ round }));
    const task = runDecider(this.deps, { sessionId: session.id, segmentId: segment.id, memoryRunId: run.id, request, signal: this.host.signal }).then(
      async (result) => {
        await this.deps.stores.memoryRuns.finish(run.id, {
          status: 'succeeded', decision: result.reset ? 'reset' : 'keep', transcript: result.transcript, usage: result.usage,
        });
        this.deps.log.info({ sessionId: session.id, memoryRunId: run.id, reset: result.reset }, 'decider-end');
        this.deps.events.emit({ type: 'memory-run-end', session, role: 'decider', memoryRunId: run.id, status: 'succeeded', decision: result.reset ? 'reset' : 'keep' });
        if (result.reset) this.host.requestReset(segment.id);
      },
      (error: unknown) => this.runFailed(session, 'decider', run.id, error),
    );
    this.decider = task.finally(() => {
      this.decider = null;
    });
  }

  private async summarizerSucceeded(session: SessionRecord, memoryRunId: string, round: number, result: MemoryRunResult): Promise<void> {
    const changes = await memoryRunChanges(this.deps, memoryRunId);
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

/** One change per document a memory run wrote: from before its first write to after its last. */
export async function memoryRunChanges(deps: Pick<AgentDeps, 'stores'>, memoryRunId: string): Promise<DocumentChange[]> {
  const written = await deps.stores.documents.versionsByRun(memoryRunId);
  const byDocument = new Map<string, typeof written>();
  for (const version of written) byDocument.set(version.documentId, [...(byDocument.get(version.documentId) ?? []), version]);
  const changes: DocumentChange[] = [];
  for (const [documentId, versions] of byDocument) {
    versions.sort((left, right) => left.version - right.version);
    const first = versions[0];
    const last = versions.at(-1);
    if (!first || !last) continue;
    const history = await deps.stores.documents.versions(documentId);
    const before = history.find((version) => version.version === first.version - 1);
    const beforeText = before && !before.deleted ? before.content : '';
    const afterText = last.deleted ? '' : last.content;
    const diff = diffLines(beforeText, afterText);
    changes.push({
      documentId, path: last.path, version: last.version, previousVersion: first.version - 1,
      added: diff.added, removed: diff.removed, deleted: last.deleted,
    });
  }
  return changes.sort((left, right) => left.path.localeCompare(right.path));
}
