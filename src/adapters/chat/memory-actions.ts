// What people can do to a memory change from a chat platform: revert it, mark it reviewed, and find
// the last one of a session's memory space. Shared by the Slack and Discord adapters.
import type { DocumentAuthor, DocumentStore, RevertOutcome, SessionRecord } from '../../core/store.js';

/**
 * Restores every document a memory run changed to its state before the run, as new versions by
 * `author`: all or nothing, and once per run (a second click or command is a no-op).
 */
export function revertMemoryRun(
  stores: { documents: DocumentStore },
  memoryRunId: string,
  author: Extract<DocumentAuthor, { kind: 'person' }>,
): Promise<RevertOutcome> {
  return stores.documents.revertRun(memoryRunId, author);
}

/** The newest summarizer run that wrote a live document of the session's memory space, or null. */
export async function latestMemoryRunId(documents: DocumentStore, session: Pick<SessionRecord, 'id' | 'memorySpaceId'>): Promise<string | null> {
  let latest: { runId: string; at: number } | null = null;
  for (const document of await documents.list(session.memorySpaceId, session.id)) {
    for (const version of await documents.versions(document.id)) {
      if (version.author.kind !== 'summarizer') continue;
      const at = version.createdAt.getTime();
      if (!latest || at > latest.at) latest = { runId: version.author.memoryRunId, at };
    }
  }
  return latest?.runId ?? null;
}
