// What a summarizer is told besides the context it continues: people's review of its space (the
// words are in prompts/review-brief.ts).
import type { AgentDeps } from '../agent-context.js';
import type { ReviewBrief } from '../prompts/review-brief.js';

/** At most this many events go into one instruction (the newest). */
export const maxBriefEvents = 30;

/** Reads the brief of a space; `exceptEventId` leaves out the event a requested run carries itself. */
export async function readReviewBrief(deps: Pick<AgentDeps, 'stores'>, spaceId: string, exceptEventId?: number): Promise<ReviewBrief> {
  const [unseen, documents] = await Promise.all([deps.stores.reviews.unseen(spaceId, maxBriefEvents), deps.stores.documents.spaceDocuments(spaceId)]);
  const pinned = documents.flatMap(({ document }) => document.pinnedLines.map((line) => ({ path: document.path, line })));
  return { events: unseen.events.filter((event) => event.id !== exceptEventId), omitted: unseen.omitted, pinned };
}
