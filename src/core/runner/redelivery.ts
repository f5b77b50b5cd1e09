// R17: what a session still owes its thread (answers and notes stored but never taken by a chat
// adapter, e.g. because the process died in between) is emitted again. Delivery state belongs to
// the original message: carried copies are never owed, so a reset cannot make anything owed twice.
import type { AgentDeps } from '../agent-context.js';
import { answerFiles } from '../loop/answer-files.js';
import { changeCounts, memoryRunChanges } from '../memory-run-changes.js';
import { summarizerNote } from '../memory/summarizer.js';
import { memoryCostOfSegment } from '../spend.js';
import type { SessionRecord, StoredMessage } from '../store.js';

/**
 * Emits every answer and note the session still owes; returns how many. Adapters deduplicate by
 * key. Each answer names its files again, read from its own segment (`current`, when given, is the
 * current one as held in memory; an earlier one is read from the store).
 */
export async function redeliver(deps: AgentDeps, session: SessionRecord, current?: { segmentId: string; entries: readonly StoredMessage[] }): Promise<number> {
  const pending = await deps.stores.deliveries.pending(session.id);
  const segments = new Map<string, readonly StoredMessage[]>(current ? [[current.segmentId, current.entries]] : []);
  for (const answer of pending.answers) {
    let entries = segments.get(answer.segmentId);
    if (!entries) segments.set(answer.segmentId, (entries = await deps.stores.context.segmentMessages(answer.segmentId)));
    const files = answerFiles(entries, answer.seq, (tool) => deps.tools.deliversFile(tool));
    // Owed regardless of who holds the lease now: no fencing token.
    deps.events.emit({ type: 'answer', session, text: answer.text, segmentId: answer.segmentId, seq: answer.seq, fencingToken: null, files });
  }
  for (const reset of pending.resets) {
    const memoryCostUsd = reset.previousSegmentId === null ? null : await memoryCostOfSegment({ settings: deps.settings, usage: deps.stores.usage }, session.id, reset.previousSegmentId);
    deps.events.emit({ type: 'context-reset', session, segmentId: reset.segmentId, segmentOrdinal: reset.ordinal, tokensBefore: reset.tokensBefore, tokensAfter: reset.tokensAfter, carriedMessages: reset.carriedMessages, memoryCostUsd, ...(reset.reason ? { reason: reset.reason } : {}) });
  }
  for (const run of pending.memoryRuns) {
    const changes = (await memoryRunChanges(deps.stores.documents, run.memoryRunId)).map(changeCounts);
    deps.events.emit({ type: 'memory-updated', session, memoryRunId: run.memoryRunId, round: run.round, changes, usage: run.usage, note: summarizerNote(run.transcript), ...(run.request ? { request: run.request } : {}) });
  }
  const total = pending.answers.length + pending.resets.length + pending.memoryRuns.length;
  if (total) deps.log.info({ sessionId: session.id, answers: pending.answers.length, notes: total - pending.answers.length }, 'deliveries-resent');
  return total;
}
