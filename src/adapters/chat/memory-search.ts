// `memory search <words>` for people: the space's memory documents and its past conversations,
// best matches first, with the words in bold. Words match in any language (the `simple` search).
import type { Stores } from '../../core/store.js';

/** Matches shown per kind (documents, conversations). */
const shownPerKind = 5;

/** The answer to a search of a memory space, in Markdown. */
export async function memorySearchText(stores: Pick<Stores, 'documents' | 'context' | 'sessions'>, spaceId: string, words: string): Promise<string> {
  const [documents, messages] = await Promise.all([
    stores.documents.search(spaceId, words, shownPerKind),
    // '' is no segment's id: the current conversations are searched too.
    stores.context.searchOriginals(spaceId, words, '', shownPerKind),
  ]);
  const quoted = `“${words.length > 100 ? `${words.slice(0, 100)}…` : words}”`;
  if (documents.length === 0 && messages.length === 0) return `🔎 Nothing in this memory matches ${quoted}.`;
  const lines = [`🔎 Memory matching ${quoted}:`];
  if (documents.length > 0) lines.push('**Documents**', ...documents.map((hit) => `• ${hit.path} (v${hit.version}): ${hit.snippet}`));
  if (messages.length > 0) {
    const titles = new Map<string, string>();
    for (const id of new Set(messages.map((hit) => hit.sessionId))) titles.set(id, (await stores.sessions.get(id))?.title ?? 'a conversation');
    lines.push('**Conversations**', ...messages.map((hit) => `• “${titles.get(hit.sessionId) ?? ''}” (${hit.role}, context ${hit.segmentOrdinal}): ${hit.snippet}`));
  }
  return lines.join('\n');
}
