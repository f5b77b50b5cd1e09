// R6: the reset. The worker is already stopped at a checkpoint (or idle) and no summarizer runs.
// Carry over what no successful summarizer has seen, start a new segment from fresh init messages
// at its own current step, in one transaction with the end of the old segment.
import type { AgentDeps } from '../agent-context.js';
import { estimateTokens, requestTokens } from '../loop/context-window.js';
import { carryOver, fitCarryOver, trimCarryOver } from './carry-over.js';
import { buildInitMessages } from './init-messages.js';
import { initMainVersion, tellInherited } from './inherited-memory.js';
import type { LiveContext } from '../loop/live-context.js';
import { memoryCostOfSegment } from '../spend.js';
import type { SessionRecord, StoredMessage } from '../store.js';
import { currentStep } from './trigger-policy.js';

/** Options of a reset. */
export interface ResetOptions {
  /** The system asked for it (R19), not a decider or a person: the note says the context was full. */
  reason?: 'context-full';
  /** R20: forks a summarizer over the context and resolves when it ended (success or not). */
  summarize?: () => Promise<void>;
}

export interface ResetOutcome {
  tokensBefore: number;
  tokensAfter: number;
  carriedMessages: number;
  /** Estimated tokens of the carried messages (R20: within the carry-over budget). */
  carriedTokens: number;
}

/** Performs the reset on a stopped worker whose summarizers have finished. */
export async function resetContext(deps: AgentDeps, session: SessionRecord, context: LiveContext, options: ResetOptions = {}): Promise<ResetOutcome> {
  const init = await buildInitMessages(deps, session);
  const { carryBudgetPercent, hardLimitPercent, contextWindow } = deps.settings;
  // R20: the budget, and never more than the room the fresh init messages leave under the hard
  // limit (a small window), so the new segment does not start above it.
  const room = Math.floor((hardLimitPercent * contextWindow) / 100) - requestTokens(init, deps.tools.definitions);
  const budget = Math.max(0, Math.min(Math.floor((carryBudgetPercent * contextWindow) / 100), room));
  let fitted = fitCarryOver(carryOver(context.entries, await succeededRuns(deps, context)), budget);
  if (!fitted.fits && options.summarize) {
    // R20: the one case where the worker waits for memory: its context is full.
    deps.log.info({ sessionId: session.id, budget }, 'carry-over-summarize');
    await options.summarize();
    fitted = fitCarryOver(carryOver(context.entries, await succeededRuns(deps, context)), budget);
  }
  const carried = fitted.fits ? fitted.entries : trimCarryOver(fitted.entries, budget);
  const entries: StoredMessage[] = [
    ...init.map((message, seq) => ({ seq, message, isInit: true, isMarker: false, memoryRunId: null })),
    ...carried.map((entry, index) => ({ ...entry, seq: init.length + index })),
  ];
  const tokensBefore = context.nextCallTokens();
  // R2 measures the new context as its first call will send it: the tools array included.
  const tokensAfter = requestTokens(entries.map((entry) => entry.message), deps.tools.definitions);
  const segment = await deps.stores.context.startSegment(session.id, {
    fromSegmentId: context.segment.id,
    messages: entries,
    carriedMessages: carried.length,
    startTokens: tokensAfter,
    // No immediate re-trigger: the new segment starts at its own current step (R6).
    lastStep: currentStep(tokensAfter, deps.settings.contextWindow, deps.settings.stepPercent),
    ...(options.reason ? { reason: options.reason } : {}),
  });
  const ended = context.segment.id;
  // The MAIN.md version the ending context started from: what this thread last saw of it.
  const seen = initMainVersion(context.entries.filter((entry) => entry.isInit).map((entry) => entry.message));
  context.replace(segment, entries);
  // The note says what memory cost since the last reset; a failure to tell must not fail the reset.
  const memoryCostUsd = await memoryCostOfSegment({ settings: deps.settings, usage: deps.stores.usage }, session.id, ended).catch(() => null);
  const carriedTokens = estimateTokens(carried.map((entry) => entry.message));
  deps.log.info({ sessionId: session.id, segment: segment.ordinal, tokensBefore, tokensAfter, carried: carried.length, carriedTokens, reason: options.reason }, 'context-reset');
  deps.events.emit({
    type: 'context-reset', session: { ...session, resetRequested: false }, segmentId: segment.id, segmentOrdinal: segment.ordinal,
    tokensBefore, tokensAfter, carriedMessages: carried.length, memoryCostUsd, ...(options.reason ? { reason: options.reason } : {}),
  });
  if (seen !== null) await tellInherited(deps, session, segment.id, seen, init);
  return { tokensBefore, tokensAfter, carriedMessages: carried.length, carriedTokens };
}

/** The summarizer runs whose markers are in the context and that succeeded (R6: only they count). */
async function succeededRuns(deps: AgentDeps, context: LiveContext): Promise<Set<string>> {
  const markerRuns = context.entries.flatMap((entry) => (entry.isMarker && entry.memoryRunId ? [entry.memoryRunId] : []));
  const statuses = markerRuns.length > 0 ? await deps.stores.memoryRuns.statuses(markerRuns) : new Map<string, string>();
  return new Set([...statuses].filter(([, status]) => status === 'succeeded').map(([id]) => id));
}
