// What a summarizer is told besides the context it continues (R4): which part of it is new to
// memory, MAIN.md as it stands against the copy in the init messages, and people's review of its
// space (the words are in prompts/).
import type { AgentDeps } from '../agent-context.js';
import type { ChatMessage } from '../messages.js';
import type { MainDocumentState, NewToMemory } from '../prompts/memory-instructions.js';
import { initMainText, initMainVersion } from '../prompts/prompts.js';
import type { ReviewBrief } from '../prompts/review-brief.js';
import type { MemoryRunRecord, SessionRecord, StoredMessage } from '../store.js';
import { mainDocumentPath } from '../memory-store.js';
import { compactDiff, diffLines } from '../line-diff.js';

/** At most this many events go into one instruction (the newest). */
export const maxBriefEvents = 30;

/** What a fork notes at once of the context as forked (its own marker comes after). */
export interface ForkPoint {
  /** The memory markers in it, with the runs that placed them. */
  markers: Array<{ runId: string; round: number }>;
  /** MAIN.md as the init messages show it. */
  initMain: { version: number | null; text: string | null };
}

export function forkPoint(entries: readonly StoredMessage[]): ForkPoint {
  const markers = entries.flatMap((entry) => (entry.isMarker && entry.memoryRunId ? [{ runId: entry.memoryRunId, round: markerRound(entry.message) }] : []));
  const main = entries[1]?.message.content;
  return { markers, initMain: { version: initMainVersion(main), text: initMainText(main) } };
}

/**
 * Which part of the context is new to memory, given its markers: after the latest whose run
 * succeeded. `statuses` holds the outcomes this process saw and learns those of the others.
 */
export async function readNewToMemory(deps: Pick<AgentDeps, 'stores'>, statuses: Map<string, MemoryRunRecord['status']>, markers: ForkPoint['markers']): Promise<NewToMemory> {
  const unknown = markers.filter((marker) => !statuses.has(marker.runId)).map((marker) => marker.runId);
  // Runs of an earlier process (before a restart or a take-over): their stored outcome counts;
  // one still "running" there did not finish and does not count.
  if (unknown.length > 0) for (const [id, status] of await deps.stores.memoryRuns.statuses(unknown)) statuses.set(id, status);
  const latest = markers.findLast((marker) => statuses.get(marker.runId) === 'succeeded');
  return latest ? { after: 'marker', round: latest.round } : { after: 'init' };
}

/**
 * MAIN.md for the instruction (lean forks): only its version when the init messages already show
 * it, only the changes since that copy when they are much shorter, else its text.
 */
export async function readMainState(deps: Pick<AgentDeps, 'stores'>, session: SessionRecord, init: ForkPoint['initMain']): Promise<MainDocumentState> {
  const main = await deps.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath });
  if (main && init.version !== null && main.version === init.version) return { unchangedSince: 'init', version: main.version };
  if (main && init.text !== null) {
    const changes = compactDiff(diffLines(init.text, main.content), 1);
    if (changes.length * 2 < main.content.length) return { changesSinceInit: changes, version: main.version };
  }
  return { current: main?.content ?? '', version: main?.version ?? null };
}

/** Reads the brief of a space; `exceptEventId` leaves out the event a requested run carries itself. */
export async function readReviewBrief(deps: Pick<AgentDeps, 'stores'>, spaceId: string, exceptEventId?: number): Promise<ReviewBrief> {
  const [unseen, documents] = await Promise.all([deps.stores.reviews.unseen(spaceId, maxBriefEvents), deps.stores.documents.spaceDocuments(spaceId)]);
  const pinned = documents.flatMap(({ document }) => document.pinnedLines.map((line) => ({ path: document.path, line })));
  return { events: unseen.events.filter((event) => event.id !== exceptEventId), omitted: unseen.omitted, pinned };
}

/** The round a marker names (`<memory-checkpoint n="3"/>`). */
function markerRound(message: ChatMessage): number {
  const match = typeof message.content === 'string' ? /n="(\d+)"/.exec(message.content) : null;
  return match?.[1] ? Number(match[1]) : 0;
}
