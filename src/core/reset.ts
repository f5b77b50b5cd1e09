// R6: the reset. The worker is already stopped at a checkpoint (or idle) and no summarizer runs.
// Carry over what no successful summarizer has seen, start a new segment from fresh init messages
// at its own current step, in one transaction with the end of the old segment.
import type { AgentDeps } from './agent-context.js';
import { requestTokens } from './context-window.js';
import { buildInitMessages } from './init-messages.js';
import type { LiveContext } from './live-context.js';
import { memoryCostOfSegment } from './spend.js';
import type { SessionRecord, StoredMessage } from './store.js';
import { currentStep } from './trigger-policy.js';

/**
 * Messages after the latest marker whose summarizer run succeeded; all conversational messages
 * when there is none. Markers themselves are not carried (they belong to the old segment). The
 * store never marks a carried copy as owed delivery: its original keeps that mark (R17).
 */
export function carryOver(entries: readonly StoredMessage[], succeededRuns: ReadonlySet<string>): StoredMessage[] {
  let start = 0;
  entries.forEach((entry, index) => {
    if (entry.isMarker && entry.memoryRunId && succeededRuns.has(entry.memoryRunId)) start = index + 1;
  });
  const conversation = (from: number) => entries.slice(from).filter((entry) => !entry.isInit && !entry.isMarker);
  let carried = conversation(start);
  if (carried.length === 0) {
    // Nothing after the boundary: keep the last exchange (from the last person's message on), so
    // the new context never starts without the conversation it is in (§9.1 defect 10).
    const all = conversation(0);
    const lastPerson = all.findLastIndex((entry) => entry.message.role === 'user');
    carried = lastPerson < 0 ? [] : all.slice(lastPerson);
  }
  return carried;
}

export interface ResetOutcome {
  tokensBefore: number;
  tokensAfter: number;
  carriedMessages: number;
}

/** Performs the reset on a stopped worker whose summarizers have finished. */
export async function resetContext(deps: AgentDeps, session: SessionRecord, context: LiveContext): Promise<ResetOutcome> {
  const markerRuns = context.entries.flatMap((entry) => (entry.isMarker && entry.memoryRunId ? [entry.memoryRunId] : []));
  const statuses = markerRuns.length > 0 ? await deps.stores.memoryRuns.statuses(markerRuns) : new Map();
  const succeeded = new Set([...statuses].filter(([, status]) => status === 'succeeded').map(([id]) => id));
  const carried = carryOver(context.entries, succeeded);
  const init = await buildInitMessages(deps, session);
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
  });
  const ended = context.segment.id;
  context.replace(segment, entries);
  // The note says what memory cost since the last reset; a failure to tell must not fail the reset.
  const memoryCostUsd = await memoryCostOfSegment({ settings: deps.settings, usage: deps.stores.usage }, session.id, ended).catch(() => null);
  deps.log.info({ sessionId: session.id, segment: segment.ordinal, tokensBefore, tokensAfter, carried: carried.length }, 'context-reset');
  deps.events.emit({
    type: 'context-reset', session: { ...session, resetRequested: false }, segmentId: segment.id, segmentOrdinal: segment.ordinal,
    tokensBefore, tokensAfter, carriedMessages: carried.length, memoryCostUsd,
  });
  return { tokensBefore, tokensAfter, carriedMessages: carried.length };
}
