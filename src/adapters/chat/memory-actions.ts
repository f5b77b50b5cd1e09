// What people can do to a memory change from a chat platform: revert it, mark it reviewed, and find
// the last one of a session's memory space. Shared by the Slack and Discord adapters.
import type { DocumentAuthor, DocumentStore, EventLog, SessionRecord } from '../../core/store.js';

/** The outcome of a revert. */
export interface RevertOutcome {
  status: 'reverted' | 'already-reverted' | 'nothing-to-revert';
  /** Paths of the documents restored. */
  paths: string[];
}

/**
 * Restores every document a memory run changed to its state before the run, as new versions by
 * `author`. Happens once per run: the event log makes a second click or command a no-op.
 */
export async function revertMemoryRun(
  stores: { documents: DocumentStore; events: EventLog },
  memoryRunId: string,
  author: Extract<DocumentAuthor, { kind: 'person' }>,
): Promise<RevertOutcome> {
  const written = await stores.documents.versionsByRun(memoryRunId);
  if (written.length === 0) return { status: 'nothing-to-revert', paths: [] };
  if (!(await stores.events.markProcessed(`revert:${memoryRunId}`))) return { status: 'already-reverted', paths: [] };
  // The run's first version of each document: reverting it restores the state before the run.
  const first = new Map<string, (typeof written)[number]>();
  for (const version of written) {
    const seen = first.get(version.documentId);
    if (!seen || version.version < seen.version) first.set(version.documentId, version);
  }
  const paths: string[] = [];
  for (const version of [...first.values()].sort((left, right) => left.path.localeCompare(right.path))) {
    await stores.documents.revert(version.documentId, version.version, author);
    paths.push(version.path);
  }
  return { status: 'reverted', paths };
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
