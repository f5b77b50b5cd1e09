// R6: the reset. The worker is already stopped at a checkpoint (or idle) and no summarizer runs.
// Carry over what no successful summarizer has seen, start a new segment from fresh init messages
// at its own current step, in one transaction with the end of the old segment.
import type { AgentDeps } from '../agent-context.js';
import { estimateTokens, requestTokens } from '../loop/context-window.js';
import { buildInitMessages } from './init-messages.js';
import type { LiveContext } from '../loop/live-context.js';
import type { ChatMessage } from '../messages.js';
import { capHeadTail } from '../loop/output-cap.js';
import { memoryCostOfSegment } from '../runner/spend.js';
import type { SessionRecord, StoredMessage } from '../store.js';
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

/** The stub a tool result older than the last batch leaves in the carry-over (R20). */
export function carriedToolStub(tool: string, chars: number): string {
  return `[${tool} result (${chars} characters) not carried over to keep the new context small; it is in the archive of the earlier context: memory_search finds it, or call ${tool} again]`;
}

/**
 * R20: `carried` within `budgetTokens`: tool results older than the last tool batch become stubs,
 * oldest first, until it fits. `fits` is false when the stubs were not enough.
 */
export function fitCarryOver(carried: readonly StoredMessage[], budgetTokens: number): { entries: StoredMessage[]; fits: boolean } {
  const entries = [...carried];
  const lastBatchCall = entries.findLastIndex((entry) => entry.message.role === 'assistant' && (entry.message.tool_calls?.length ?? 0) > 0);
  const older = entries.flatMap((entry, index) => (entry.message.role === 'tool' && index < lastBatchCall ? [index] : []));
  let tokens = estimateTokens(entries.map((entry) => entry.message));
  for (const index of older) {
    if (tokens <= budgetTokens) break;
    tokens -= stubToolResult(entries, index);
  }
  return { entries, fits: tokens <= budgetTokens };
}

/**
 * The last resort when neither stubs nor a summarizer made the carry-over fit (its summarizer
 * failed, or the window is tiny): every tool result becomes a stub, then the oldest messages stay
 * in the archive only (a call with its results, never split), then the last one is cut. Bounded:
 * the new segment never starts above its budget, so resets cannot loop.
 */
export function trimCarryOver(carried: readonly StoredMessage[], budgetTokens: number): StoredMessage[] {
  const entries = [...carried];
  let tokens = estimateTokens(entries.map((entry) => entry.message));
  for (let index = 0; index < entries.length && tokens > budgetTokens; index += 1) {
    if (entries[index]?.message.role === 'tool') tokens -= stubToolResult(entries, index);
  }
  // Then the oldest groups (a message with the results of its tool calls) stay in the archive;
  // what is kept must fit beside the note that says so. Their tokens are subtracted (linear in the
  // carry-over however many small messages it has), and the rest is measured whole once it seems
  // to fit, as a list's estimate is not exactly the sum of its parts.
  let dropped = 0;
  let limit = budgetTokens;
  if (tokens > budgetTokens) {
    limit = budgetTokens - estimateTokens([droppedNote(entries.length)]) - 1;
    while (tokens > limit && entries.length - dropped > 1) {
      let end = dropped + 1;
      while (end < entries.length - 1 && entries[end]?.message.role === 'tool') end += 1;
      tokens -= estimateTokens(entries.slice(dropped, end).map((entry) => entry.message));
      dropped = end;
      if (tokens <= limit) tokens = estimateTokens(entries.slice(dropped).map((entry) => entry.message));
    }
  }
  const kept = entries.slice(dropped);
  const last = kept.at(-1);
  if (last && tokens > limit && typeof last.message.content === 'string') {
    kept[kept.length - 1] = { ...last, message: { ...last.message, content: capHeadTail(last.message.content, Math.max(200, limit * 3), 'message') } as ChatMessage };
  }
  if (dropped === 0) return kept;
  // Placed where the dropped messages were; its seq is renumbered with the rest.
  return [{ seq: kept[0]?.seq ?? 0, message: droppedNote(dropped), isInit: false, isMarker: false, memoryRunId: null }, ...kept];
}

function droppedNote(dropped: number): ChatMessage {
  return { role: 'user', content: `[${dropped} earlier messages of this conversation were not carried over (the context was full); memory_search finds them in the archive]` };
}

/** Replaces the tool result at `index` by its stub; returns the tokens saved. */
function stubToolResult(entries: StoredMessage[], index: number): number {
  const entry = entries[index];
  if (!entry || entry.message.role !== 'tool') return 0;
  const callId = entry.message.tool_call_id;
  let call: StoredMessage | undefined;
  // Back from the result to its call (a few messages up: no copy of the list per result).
  for (let earlier = index - 1; earlier >= 0 && !call; earlier -= 1) {
    const message = entries[earlier]?.message;
    if (message?.role === 'assistant' && message.tool_calls?.some((candidate) => candidate.id === callId)) call = entries[earlier];
  }
  const tool = call?.message.tool_calls?.find((candidate) => candidate.id === callId)?.function.name ?? 'tool';
  const content = typeof entry.message.content === 'string' ? entry.message.content : JSON.stringify(entry.message.content);
  const stub = carriedToolStub(tool, content.length);
  if (stub.length >= content.length) return 0;
  const before = estimateTokens([entry.message]);
  const message = { ...entry.message, content: stub } as ChatMessage;
  entries[index] = { ...entry, message };
  return before - estimateTokens([message]);
}

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
  context.replace(segment, entries);
  // The note says what memory cost since the last reset; a failure to tell must not fail the reset.
  const memoryCostUsd = await memoryCostOfSegment({ settings: deps.settings, usage: deps.stores.usage }, session.id, ended).catch(() => null);
  const carriedTokens = estimateTokens(carried.map((entry) => entry.message));
  deps.log.info({ sessionId: session.id, segment: segment.ordinal, tokensBefore, tokensAfter, carried: carried.length, carriedTokens, reason: options.reason }, 'context-reset');
  deps.events.emit({
    type: 'context-reset', session: { ...session, resetRequested: false }, segmentId: segment.id, segmentOrdinal: segment.ordinal,
    tokensBefore, tokensAfter, carriedMessages: carried.length, memoryCostUsd, ...(options.reason ? { reason: options.reason } : {}),
  });
  return { tokensBefore, tokensAfter, carriedMessages: carried.length, carriedTokens };
}

/** The summarizer runs whose markers are in the context and that succeeded (R6: only they count). */
async function succeededRuns(deps: AgentDeps, context: LiveContext): Promise<Set<string>> {
  const markerRuns = context.entries.flatMap((entry) => (entry.isMarker && entry.memoryRunId ? [entry.memoryRunId] : []));
  const statuses = markerRuns.length > 0 ? await deps.stores.memoryRuns.statuses(markerRuns) : new Map<string, string>();
  return new Set([...statuses].filter(([, status]) => status === 'succeeded').map(([id]) => id));
}
