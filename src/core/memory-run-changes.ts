// What a memory run changed: per document, from before its first write to after its last. Core
// announces the counts (memory-updated); chat adapters show the diff itself.
import type { DocumentChange } from './events.js';
import { diffLines, type LineDiff } from './line-diff.js';
import type { DocumentStore } from './store.js';

/** A document's change with its texts and line diff. */
export interface DocumentRunChange extends DocumentChange {
  /** The document before the run ('' when the run created it) and as the run left it. */
  before: string;
  after: string;
  lines: LineDiff;
}

/** One change per document the run wrote, by path. */
export async function memoryRunChanges(documents: DocumentStore, memoryRunId: string): Promise<DocumentRunChange[]> {
  const written = await documents.versionsByRun(memoryRunId);
  const byDocument = new Map<string, typeof written>();
  for (const version of written) byDocument.set(version.documentId, [...(byDocument.get(version.documentId) ?? []), version]);
  const changes: DocumentRunChange[] = [];
  for (const [documentId, versions] of byDocument) {
    versions.sort((left, right) => left.version - right.version);
    const first = versions[0];
    const last = versions.at(-1);
    if (!first || !last) continue;
    const history = await documents.versions(documentId);
    const previous = history.find((version) => version.version === first.version - 1);
    const before = previous && !previous.deleted ? previous.content : '';
    const after = last.deleted ? '' : last.content;
    const lines = diffLines(before, after);
    changes.push({
      documentId, path: last.path, version: last.version, previousVersion: first.version - 1,
      added: lines.added, removed: lines.removed, deleted: last.deleted, before, after, lines,
    });
  }
  return changes.sort((left, right) => left.path.localeCompare(right.path));
}

/** The counts of a change, as events carry them (no document text). */
export function changeCounts(change: DocumentRunChange): DocumentChange {
  const { documentId, path, version, previousVersion, added, removed, deleted } = change;
  return { documentId, path, version, previousVersion, added, removed, deleted };
}
