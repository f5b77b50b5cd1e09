// A new context (a new session, or a reset) starts from the space's MAIN.md. When another session
// changed it since this thread last saw it, the thread is told where the memory it starts from
// came from: a summarizer in another thread that stored an injected "rule" must not spread it to
// someone else's session unnoticed. Low-noise: only changes this thread has not seen (not its
// own summarizer's, not Hippo's initial document).
import type { AgentDeps } from '../agent-context.js';
import type { AgentEvent } from '../events.js';
import type { ChatMessage } from '../messages.js';
import type { DocumentVersionRecord, SessionRecord } from '../store.js';
import { mainDocumentPath } from '../memory-store.js';

/** Versions looked at, newest first: a thread's own changes rarely hide more than this many. */
const lookBack = 50;

/** The MAIN.md version the init messages carry (memoryDocumentsMessage), or null. */
export function initMainVersion(messages: readonly ChatMessage[]): number | null {
  for (const message of messages) {
    if (typeof message.content !== 'string') continue;
    // The header comes before the document's text, so the first match is the header itself.
    const match = /<document path="MAIN\.md" version="(\d{1,9})">/.exec(message.content.slice(0, 4_000));
    if (match?.[1]) return Number(match[1]);
  }
  return null;
}

/**
 * The newest change to MAIN.md after version `seen` (0: a new session, which has seen nothing)
 * up to `current` that this session did not make itself, as the event that tells the thread;
 * null when there is none.
 */
export async function inheritedChange(
  deps: Pick<AgentDeps, 'stores'>,
  session: SessionRecord,
  segmentId: string,
  seen: number,
  current: number | null,
): Promise<Extract<AgentEvent, { type: 'memory-inherited' }> | null> {
  if (current === null || current <= seen) return null;
  const main = await deps.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath });
  if (!main) return null;
  const { versions } = await deps.stores.documents.history(main.id, { offset: Math.max(0, main.version - current), limit: lookBack });
  const change = versions.find((version) => version.version > seen && version.version <= current && fromElsewhere(version, session.id));
  if (!change) return null;
  const by = change.author.kind === 'person' ? change.author.name : 'background memory';
  return { type: 'memory-inherited', session, segmentId, version: current, changedAt: change.createdAt, by, inThread: change.sessionId !== null };
}

/** A change another session (or a person outside this thread) made; Hippo's initial document is none. */
function fromElsewhere(version: DocumentVersionRecord, sessionId: string): boolean {
  if (version.author.kind === 'system' || version.author.kind === 'worker') return false;
  return version.sessionId !== sessionId;
}

/**
 * Tells the thread (an event) when the context that starts with `init` inherits a change of
 * MAIN.md made elsewhere since version `seen`. Best effort: a failure is logged, never fails the run.
 */
export async function tellInherited(deps: Pick<AgentDeps, 'stores' | 'events' | 'log'>, session: SessionRecord, segmentId: string, seen: number, init: readonly ChatMessage[]): Promise<void> {
  try {
    const event = await inheritedChange(deps, session, segmentId, seen, initMainVersion(init));
    if (event) deps.events.emit(event);
  } catch (error) {
    deps.log.warn({ sessionId: session.id, err: error instanceof Error ? error.message : String(error) }, 'memory-inherited-check-failed');
  }
}
