// What people can do to a memory change from a chat platform (R13): revert it per document without
// ever discarding a later change unseen, mark it reviewed, and find the last one of a space. Shared
// by the Slack and Discord adapters; they only draw the choices.
import { ConflictError } from '../errors.js';
import type { DocumentAuthor, DocumentRecord, DocumentStore, DocumentVersionRecord, RunDocumentChange, SessionRecord } from '../store.js';
import { personAuthor, recordChange, versionAuthor, type ReviewStores, type Reviewer } from './memory-review.js';

/** What a person's revert of a memory run did, and what it left for them to choose. */
export interface RevertResult {
  /** Documents restored now (nothing was written to them after the run). */
  reverted: string[];
  /** Documents changed again after the run: undoing it would undo those changes too; the person chooses. */
  needsChoice: RunDocumentChange[];
  /** Documents a revert of this run already restored. */
  alreadyReverted: string[];
}

/** A person as the author of a revert. */
export type PersonAuthor = Extract<DocumentAuthor, { kind: 'person' }>;

/**
 * Restores the documents a memory run changed that nobody changed since, as one transaction; the
 * others are returned for the person to decide (undo both, or cancel). Each restored document is
 * a review event of its space.
 */
export async function revertMemoryRun(stores: ReviewStores, memoryRunId: string, reviewer: Reviewer): Promise<RevertResult> {
  const { documents } = stores;
  // A change landing between the look and the write is seen on the second look.
  for (let attempt = 1; ; attempt += 1) {
    const changes = await documents.runChanges(memoryRunId);
    const clean = changes.filter((change) => !change.reverted && change.later.length === 0);
    try {
      if (clean.length > 0) {
        const targets = clean.map((change) => ({ documentId: change.documentId, expectedVersion: change.currentVersion }));
        await recordReverts(stores, await documents.revertRunDocuments(memoryRunId, targets, personAuthor(reviewer)), reviewer);
      }
    } catch (error) {
      if (error instanceof ConflictError && attempt < 3) continue;
      throw error;
    }
    return {
      reverted: clean.map((change) => change.path),
      needsChoice: changes.filter((change) => !change.reverted && change.later.length > 0),
      alreadyReverted: changes.filter((change) => change.reverted).map((change) => change.path),
    };
  }
}

/** The outcome of "undo both": done, or the document changed again (shown anew), or done before. */
export type UndoBothOutcome =
  | { status: 'reverted'; path: string }
  | { status: 'changed-again'; change: RunDocumentChange }
  | { status: 'already-reverted'; path: string }
  | { status: 'gone' };

/**
 * The person saw the later changes of one document (up to `expectedVersion`) and chose to undo
 * them together with the run's change. A change written since they looked is not discarded: it is
 * returned to be shown.
 */
export async function revertWithLaterChanges(stores: ReviewStores, memoryRunId: string, documentId: string, expectedVersion: number, reviewer: Reviewer): Promise<UndoBothOutcome> {
  const { documents } = stores;
  const change = (await documents.runChanges(memoryRunId)).find((candidate) => candidate.documentId === documentId);
  if (!change) return { status: 'gone' };
  if (change.reverted) return { status: 'already-reverted', path: change.path };
  if (change.currentVersion !== expectedVersion) return { status: 'changed-again', change };
  try {
    await recordReverts(stores, await documents.revertRunDocuments(memoryRunId, [{ documentId, expectedVersion }], personAuthor(reviewer)), reviewer);
    return { status: 'reverted', path: change.path };
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const fresh = (await documents.runChanges(memoryRunId)).find((candidate) => candidate.documentId === documentId);
    return fresh ? { status: 'changed-again', change: fresh } : { status: 'gone' };
  }
}

/** Each restored document is a review event: what the revert took out or put back. */
async function recordReverts(stores: ReviewStores, restored: readonly DocumentRecord[], reviewer: Reviewer): Promise<void> {
  for (const document of restored) await recordChange(stores, 'revert', document, reviewer);
}

/** "v5 by background memory at 12:10 UTC" for each later version. */
export function laterChangesText(later: readonly DocumentVersionRecord[]): string {
  return later
    .map((version) => `v${version.version} by ${versionAuthor(version.author)} at ${version.createdAt.toISOString().slice(11, 16)} UTC${version.deleted ? ' (deleted it)' : ''}`)
    .join('; ');
}

/** The explanation a person reads before choosing, in Markdown. */
export function choiceText(change: RunDocumentChange): string {
  return `**${change.path}** was changed again after this memory change (${laterChangesText(change.later)}). Undoing this change would undo ${change.later.length === 1 ? 'that one' : 'those'} too.`;
}

/** The newest memory run of the session's space that can still be reverted, or null. */
export async function latestMemoryRunId(documents: DocumentStore, session: Pick<SessionRecord, 'memorySpaceId'>): Promise<string | null> {
  return (await documents.latestRevertibleRun(session.memorySpaceId))?.memoryRunId ?? null;
}
