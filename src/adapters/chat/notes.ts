// The words of Hippo's notes in a thread, the same on every platform: one-line summaries of memory
// changes and resets, and the diffs people review. Platforms wrap them in their own UI.
import type { AgentEvent, DocumentChange, RunUsage } from '../../core/events.js';
import { compactDiff } from '../../core/line-diff.js';
import { formatDollars } from '../../core/prices.js';
import { changeCounts, memoryRunChanges } from '../../core/memory-run-changes.js';
import type { DocumentStore, PersonRequest } from '../../core/store.js';

/** 118000 → "118k", 1234 → "1.2k", 950 → "950". */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(Math.round(tokens));
  if (tokens < 10_000) return `${(tokens / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  if (tokens < 1_000_000) return `${Math.round(tokens / 1000)}k`;
  return `${(tokens / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`;
}

/** Cached share of prompt tokens in whole percent, or null when nothing was sent. */
export function cachePercent(usage: Pick<RunUsage, 'promptTokens' | 'cachedTokens'>): number | null {
  return usage.promptTokens > 0 ? Math.round((usage.cachedTokens * 100) / usage.promptTokens) : null;
}

/** "MAIN.md +8 −2", or "old.md deleted". */
export function changeSummary(change: Pick<DocumentChange, 'path' | 'added' | 'removed' | 'deleted'>): string {
  return change.deleted ? `${change.path} deleted` : `${change.path} +${change.added} −${change.removed}`;
}

/**
 * "🧠 Memory updated · MAIN.md +8 −2 · 2 documents · cache 92%"; a run a person asked for says so
 * ("· Ada asked to remember “…”"), and says when it changed nothing, with the summarizer's note.
 */
export function memoryNoteLine(event: { changes: DocumentChange[]; usage: RunUsage; request?: PersonRequest; note?: string }): string {
  const { changes, request } = event;
  const asked = request ? `${request.name || 'Someone'} asked to ${request.kind} “${shortQuote(request.text)}”` : '';
  if (request && changes.length === 0) return `🧠 No memory change for ${asked}${event.note ? `: ${shortQuote(event.note)}` : ''}`;
  // MAIN.md first: it is the document people know; the others are named by the count.
  const primary = changes.find((change) => change.path === 'MAIN.md') ?? changes[0];
  const parts = ['🧠 Memory updated'];
  if (primary) parts.push(changeSummary(primary));
  if (changes.length > 1) parts.push(`${changes.length} documents`);
  const cache = cachePercent(event.usage);
  if (cache !== null) parts.push(`cache ${cache}%`);
  if (asked) parts.push(asked);
  return parts.join(' · ');
}

/** A person's words on one line, at most 80 characters. */
function shortQuote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** "♻️ Context reset · 118k → 14k tokens · 6 messages carried over · memory $0.12 since the last reset". */
export function resetNoteLine(event: Pick<Extract<AgentEvent, { type: 'context-reset' }>, 'tokensBefore' | 'tokensAfter' | 'carriedMessages'> & { memoryCostUsd?: number | null; reason?: 'context-full' }): string {
  const carried = event.carriedMessages === 1 ? '1 message' : `${event.carriedMessages} messages`;
  const cost = event.memoryCostUsd === null || event.memoryCostUsd === undefined ? '' : ` · memory ${formatDollars(event.memoryCostUsd)} since the last reset`;
  const why = event.reason === 'context-full' ? ' (the context was full)' : '';
  return `♻️ Context reset${why} · ${formatTokens(event.tokensBefore)} → ${formatTokens(event.tokensAfter)} tokens · ${carried} carried over${cost}`;
}

/**
 * "🧠 The memory I start from (MAIN.md v7) was last changed in another thread by background memory
 * on 2026-12-07 12:10 UTC; `@hippo memory` shows it." (`memoryHint`: how to open the memory here.)
 */
export function inheritedNoteText(event: Pick<Extract<AgentEvent, { type: 'memory-inherited' }>, 'version' | 'changedAt' | 'by' | 'inThread'>, memoryHint: string): string {
  const where = event.inThread ? 'in another thread' : 'outside this thread';
  const by = event.by.replace(/\s+/g, ' ').slice(0, 80);
  const at = event.changedAt.toISOString().slice(0, 16).replace('T', ' ');
  return `🧠 The memory I start from (MAIN.md v${event.version}) was last changed ${where} by ${by} on ${at} UTC; \`${memoryHint}\` shows it.`;
}

/**
 * The note about a spend cap: 80% used, or reached (and how to continue). A person raises a
 * session's cap; the channel's daily cap is the operator's, and renews at 00:00 UTC.
 */
export function budgetNoteText(event: Extract<AgentEvent, { type: 'budget' }>, raiseHint: string): string {
  const what = event.scope === 'session' ? 'this session' : "this channel's daily";
  const spent = `${formatDollars(event.spentUsd)} of ${formatDollars(event.capUsd)}`;
  if (event.level === 'warning') return `💸 Heads-up: ${what} budget is ${Math.floor((event.spentUsd / event.capUsd) * 100)}% used (${spent}).`;
  if (event.scope === 'channel') return `💸 Budget reached: ${what} budget is used up (${spent}), so I stopped here. Nothing is lost: it renews at 00:00 UTC (only the operator changes it); reply after that and I continue.`;
  return `💸 Budget reached: ${what} budget is used up (${spent}), so I stopped here. Nothing is lost: \`${raiseHint}\` raises it.`;
}

/**
 * R21's note: the run stopped at its step limit, why, and how to go on (`resumeHint`, e.g.
 * "@hippo resume").
 */
export function stepLimitNoteText(event: Pick<Extract<AgentEvent, { type: 'step-limit' }>, 'steps'>, resumeHint: string): string {
  return `⏸️ I stopped after ${event.steps} steps (model calls) without finishing: that is the limit for one run, so a task cannot loop on unattended. Nothing is lost: reply here, or press Resume (\`${resumeHint}\`), and I continue.`;
}

/** "↩️ Ada reverted the memory change to MAIN.md and notes.md". */
export function revertNoteLine(name: string, paths: string[]): string {
  const list = paths.length <= 1 ? (paths[0] ?? 'memory') : `${paths.slice(0, -1).join(', ')} and ${paths.at(-1) ?? ''}`;
  return `↩️ ${name} reverted the memory change to ${list}`;
}

/**
 * The thread note after a failed run; `resumeHint` is how to resume, e.g. "@hippo resume". The
 * error's own text is not shown: it may carry a provider's or database's words (and whatever a
 * page made the model send); the service log has it. Only a transient database failure (an
 * outage the session waits out, `retryable`) is told as the database being away: any other
 * database error stopped the run for good, and a person must resume it.
 */
export function errorNoteText(error: { code: string; message: string; retryable?: boolean }, resumeHint: string): string {
  if (error.code === 'storage' && error.retryable === true) {
    return "⚠️ The database is unreachable, so I stopped here for now. Nothing is lost: I'll continue by myself as soon as it is back.";
  }
  const what = errorKind(error.code);
  return `⚠️ I stopped because of ${what} (details are in the service log).\nNothing is lost: say \`${resumeHint}\` to continue from here.`;
}

/** What an error code means to the people in the thread ("an error of the model endpoint"). */
export function errorKind(code: string): string {
  return errorKinds[code] ?? 'an internal error';
}

/** What each error code means to the people in the thread. */
const errorKinds: Record<string, string> = {
  model: 'an error of the model endpoint',
  cancelled: 'a cancellation',
  tool: 'a tool error',
  config: 'a configuration problem',
  platform: 'a chat platform error',
  storage: 'a database error',
};

/** One document as a memory run changed it. */
export interface DocumentDiff extends DocumentChange {
  /** Changed lines with two lines of context ("+ ", "- ", "  " prefixes, "…" between hunks). */
  diff: string;
  /** The document as the run left it. */
  content: string;
}

/** What a memory run changed, per document, with the diff to show. */
export async function memoryRunDiffs(documents: DocumentStore, memoryRunId: string): Promise<DocumentDiff[]> {
  return (await memoryRunChanges(documents, memoryRunId)).map((change) => ({
    ...changeCounts(change),
    diff: compactDiff(change.lines) || '(no line changes)',
    content: change.after,
  }));
}

/** A memory run's diffs as Markdown, for platforms that show them as text. */
export function memoryDiffMarkdown(diffs: DocumentDiff[]): string {
  if (diffs.length === 0) return 'This memory change touched no documents.';
  return diffs
    .map((entry) => `**${changeSummary(entry)}** (v${entry.previousVersion} → v${entry.version})\n\`\`\`diff\n${entry.diff}\n\`\`\``)
    .join('\n\n');
}
