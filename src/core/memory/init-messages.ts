// Init messages of a segment: the system prompt, then the memory documents (MAIN.md of the memory
// space, TODO.md of the session), read when the segment starts and frozen until the next reset.
import type { AgentDeps } from '../agent-context.js';
import type { ChatMessage } from '../messages.js';
import { initialMainDocument, memoryDocumentsMessage, systemPrompt } from '../prompts/prompts.js';
import { mainDocumentPath, todoDocumentPath, type SessionRecord } from '../store.js';

/** Reads MAIN.md (creating it on first use) and the session's TODO.md. */
export async function readMemoryDocuments(deps: Pick<AgentDeps, 'stores'>, session: SessionRecord): Promise<{ main: string; mainVersion: number | null; todo: string }> {
  const documents = deps.stores.documents;
  const mainKey = { spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath };
  let [main, todo] = await documents.readMany([mainKey, { spaceId: session.memorySpaceId, sessionKey: session.id, path: todoDocumentPath }]);
  if (!main) {
    // A new space: created in one statement. A row already there (removed by a person, or
    // created by another session just now) goes through the checked write instead.
    main = await documents.create(mainKey, initialMainDocument, { kind: 'system' });
    if (!main) {
      try {
        main = await documents.write(mainKey, initialMainDocument, { kind: 'system' }, 0);
      } catch {
        main = await documents.read(mainKey); // another session created it first
      }
    }
  }
  return { main: main?.content ?? initialMainDocument, mainVersion: main?.version ?? null, todo: todo && !todo.deleted ? todo.content : '' };
}

/**
 * Fresh init messages for a new segment: the system prompt, the same for every segment and session
 * of a platform (cached across resets), then the memory documents with the time the segment starts.
 */
export async function buildInitMessages(deps: Pick<AgentDeps, 'stores' | 'settings' | 'tools' | 'clock'>, session: SessionRecord): Promise<ChatMessage[]> {
  const documents = await readMemoryDocuments(deps, session);
  return [
    {
      role: 'system',
      content: systemPrompt({
        platform: deps.settings.platformName(session.platform),
        toolNames: deps.tools.definitions.map((definition) => definition.function.name),
        summarizerStepCap: deps.settings.summarizerMaxSteps,
      }),
    },
    { role: 'user', content: memoryDocumentsMessage({ ...documents, started: deps.clock.now() }) },
  ];
}
