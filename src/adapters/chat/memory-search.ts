// `memory search <words>` for people: the space's memory documents and its past conversations,
// best matches first, with the words in bold. Words match in any language (the `simple` search).
// Platforms render the hits their way: Markdown in a thread here, blocks in Slack's App Home.
import { SearchLimitError } from '../../core/errors.js';
import type { DocumentSearchHit, SearchHit, SessionRecord, Stores } from '../../core/store.js';

/** Matches shown per kind (documents, conversations). */
const shownPerKind = 5;
/** Longest search text used (characters); the rest is ignored. */
export const searchWordsLimit = 200;

/** A match in a past conversation, with its session (null: since deleted). */
export interface ConversationHit {
  hit: SearchHit;
  session: SessionRecord | null;
}

/** What a search of a space found, at most `shownPerKind` of each kind. */
export interface MemorySearchResult {
  /** The words searched for (cut to searchWordsLimit). */
  words: string;
  documents: DocumentSearchHit[];
  conversations: ConversationHit[];
}

/**
 * Searches a space's documents and conversations for `words`; `searcher` is who asks (their
 * allowance of searches, docs/security.md "Security and limits"). Throws SearchLimitError when refused or stopped.
 */
export async function searchMemory(stores: Pick<Stores, 'documents' | 'context' | 'sessions'>, spaceId: string, words: string, searcher: string): Promise<MemorySearchResult> {
  const query = words.trim().slice(0, searchWordsLimit);
  // One after the other: a search refused or stopped is refused whole, and never holds two backends.
  const documents = await stores.documents.search(spaceId, query, shownPerKind, searcher);
  // '' is no segment's id: the current conversations are searched too.
  const messages = await stores.context.searchOriginals(spaceId, query, '', shownPerKind, searcher);
  const sessions = new Map<string, SessionRecord | null>();
  for (const id of new Set(messages.map((hit) => hit.sessionId))) sessions.set(id, await stores.sessions.get(id));
  return { words: query, documents, conversations: messages.map((hit) => ({ hit, session: sessions.get(hit.sessionId) ?? null })) };
}

/** The words as quoted in an answer (“…”, at most 100 characters). */
export function quotedWords(words: string): string {
  return `“${words.length > 100 ? `${words.slice(0, 100)}…` : words}”`;
}

/** The answer to a search of a memory space, in Markdown (a refused or stopped search says why). */
export async function memorySearchText(stores: Pick<Stores, 'documents' | 'context' | 'sessions'>, spaceId: string, words: string, searcher: string): Promise<string> {
  let result: MemorySearchResult;
  try {
    result = await searchMemory(stores, spaceId, words, searcher);
  } catch (error) {
    if (error instanceof SearchLimitError) return `⏳ ${error.message}`;
    throw error;
  }
  const quoted = quotedWords(result.words);
  if (result.documents.length === 0 && result.conversations.length === 0) return `🔎 Nothing in this memory matches ${quoted}.`;
  const lines = [`🔎 Memory matching ${quoted}:`];
  if (result.documents.length > 0) lines.push('**Documents**', ...result.documents.map((hit) => `• ${hit.path} (v${hit.version}): ${hit.snippet}`));
  if (result.conversations.length > 0) {
    lines.push('**Conversations**', ...result.conversations.map(({ hit, session }) => `• “${session?.title ?? 'a conversation'}” (${hit.role}, context ${hit.segmentOrdinal}): ${hit.snippet}`));
  }
  return lines.join('\n');
}
