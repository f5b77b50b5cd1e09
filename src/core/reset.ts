// R6: the reset. The worker is already stopped at a checkpoint (or idle). Wait for a running
// summarizer, carry over what no successful summarizer has seen, start a new segment from fresh
// init messages, and set the step so the new segment does not trigger at once.
import type { AgentDeps } from './agent-context.js';
import { estimateTokens } from './context-window.js';
import { buildInitMessages } from './init-messages.js';
import type { LiveContext } from './live-context.js';
import type { MemoryManager } from './memory-manager.js';
import type { SessionRecord, StoredMessage } from './store.js';
import { currentStep } from './trigger-policy.js';

/**
 * Messages after the latest marker whose summarizer run succeeded; all conversational messages
 * when there is none. Markers themselves are not carried (they belong to the old segment).
 */
export function carryOver(entries: readonly StoredMessage[], succeededRuns: ReadonlySet<string>): StoredMessage[] {
  let start = 0;
  entries.forEach((entry, index) => {
    if (entry.isMarker && entry.memoryRunId && succeededRuns.has(entry.memoryRunId)) start = index + 1;
  });
  const carried = entries.slice(start).filter((entry) => !entry.isInit && !entry.isMarker);
  if (carried.length > 0) return carried;
  // Nothing after the boundary: keep the last exchange (from the last person's message on), so
  // the new context never starts without the conversation it is in (§9.1 defect 10).
  const conversation = entries.filter((entry) => !entry.isInit && !entry.isMarker);
  const lastPerson = conversation.findLastIndex((entry) => entry.message.role === 'user');
  return lastPerson < 0 ? [] : conversation.slice(lastPerson);
}

export interface ResetOutcome {
  tokensBefore: number;
  tokensAfter: number;
  carriedMessages: number;
}

/** Performs the reset on a stopped worker. */
export async function resetContext(
  deps: AgentDeps,
  session: SessionRecord,
  context: LiveContext,
  memory: MemoryManager,
): Promise<ResetOutcome> {
  await memory.waitForSummarizer();
  const markerRuns = context.entries.flatMap((entry) => (entry.isMarker && entry.memoryRunId ? [entry.memoryRunId] : []));
  const statuses = await deps.stores.memoryRuns.statuses(markerRuns);
  const succeeded = new Set([...statuses].filter(([, status]) => status === 'succeeded').map(([id]) => id));
  const carried = carryOver(context.entries, succeeded);
  const init = await buildInitMessages(deps, session);
  const entries: StoredMessage[] = [
    ...init.map((message, seq) => ({ seq, message, isInit: true, isMarker: false, memoryRunId: null })),
    ...carried.map((entry, index) => ({ ...entry, seq: init.length + index })),
  ];
  const tokensBefore = context.lastPromptTokens ?? (context.segment.contextTokens || estimateTokens(context.messages));
  const tokensAfter = estimateTokens(entries.map((entry) => entry.message));
  const segment = await deps.stores.context.startSegment(session.id, entries, carried.length, tokensAfter);
  // No immediate re-trigger: the new segment starts at its current step (fixes reference §9.1 #9).
  segment.lastStep = currentStep(tokensAfter, deps.settings.contextWindow, deps.settings.stepPercent);
  segment.contextTokens = tokensAfter;
  await deps.stores.context.updateSegment(segment.id, { lastStep: segment.lastStep, contextTokens: tokensAfter });
  context.replace(segment, entries);
  deps.log.info({ sessionId: session.id, segment: segment.ordinal, tokensBefore, tokensAfter, carried: carried.length }, 'context-reset');
  deps.events.emit({
    type: 'context-reset', session, segmentId: segment.id, segmentOrdinal: segment.ordinal,
    tokensBefore, tokensAfter, carriedMessages: carried.length,
  });
  return { tokensBefore, tokensAfter, carriedMessages: carried.length };
}
