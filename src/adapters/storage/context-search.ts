// Search of originals (R15): what people said in the space's other segments, bounded
// (docs/security.md "Security and limits") by the guard and the statement below.
import type { ContextStore, SearchHit } from '../../core/store.js';
import { Prisma, type PrismaClient } from '../../../prisma/generated/client.js';
import { searchQuery } from './prisma-support.js';
import { rankedCandidates, searchableChars, type SearchGuard } from './search-guard.js';

// ts_headline fragments are bounded in words; this bounds the snippet in characters as well.
const maxSnippetChars = 300;

/** ContextStore.searchOriginals, admitted and timed by `search`. */
export function createOriginalsSearch(prisma: PrismaClient, search: SearchGuard): Pick<ContextStore, 'searchOriginals'> {
  return {
    async searchOriginals(memorySpaceId, query, excludeSegmentId, limit, searcher) {
      if (query.trim() === '' || limit <= 0) return [];
      search.admit(searcher);
      const rows = await search.query<SearchRow>(prisma, originalsSearch(memorySpaceId, query, excludeSegmentId, limit));
      return rows.map((row): SearchHit => ({
        sessionId: row.sessionId,
        segmentOrdinal: row.segmentOrdinal,
        seq: row.seq,
        role: row.role,
        snippet: clip(row.snippet.replace(/\s+/g, ' ').trim(), maxSnippetChars),
      }));
    },
  };
}

/**
 * The statement of searchOriginals (exported so its plan can be checked), bounded (docs/security.md
 * "Search"): the words come from the stored search_vector through its GIN index, never parsed again
 * from whole messages; only the newest `rankedCandidates` matches are ranked, and headlines are
 * built for the rows returned, from the searchable part of their text (ts_headline parses what it
 * is given). Where a segment's originals begin is found once per segment: after its init messages
 * (seq 0…) and the copies a reset carried. The matches are looked up alone (`hits`), with the
 * query written out: the planner does not count reading a row's out-of-line vector, and given a
 * join it would rather read every message of the space and test each one (search-guard.ts).
 */
export function originalsSearch(memorySpaceId: string, query: string, excludeSegmentId: string, limit: number): Prisma.Sql {
  return Prisma.sql`
    WITH query AS (SELECT ${searchQuery(query)} AS q),
    segs AS MATERIALIZED (
      SELECT g.id, g.session_id, g.ordinal,
             g.carried_messages + (SELECT min(i.seq) FROM context_messages i WHERE i.segment_id = g.id AND NOT i.is_init) AS first_original
      FROM segments g JOIN sessions s ON s.id = g.session_id
      WHERE s.memory_space_id = ${memorySpaceId} AND g.id <> ${excludeSegmentId}),
    hits AS MATERIALIZED (
      SELECT m.id, m.segment_id, m.seq, m.role FROM context_messages m
      WHERE m.search_vector @@ ${searchQuery(query)} AND NOT m.is_init AND NOT m.is_marker),
    matched AS (
      SELECT h.id, h.seq, h.role, segs.session_id, segs.ordinal
      FROM hits h JOIN segs ON segs.id = h.segment_id
      WHERE h.seq >= segs.first_original),
    candidates AS (SELECT * FROM matched ORDER BY id DESC LIMIT ${rankedCandidates}::int),
    ranked AS (
      SELECT c.*, ts_rank(m.search_vector, query.q) AS rank
      FROM query, candidates c JOIN context_messages m ON m.id = c.id
      ORDER BY rank DESC, c.id DESC
      LIMIT ${limit}::int)
    SELECT ranked.session_id AS "sessionId", ranked.ordinal AS "segmentOrdinal", ranked.seq, ranked.role,
           ts_headline('simple', left(m.search_text, ${searchableChars}::int), query.q,
                       'MaxWords=40, MinWords=15, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**') AS snippet
    FROM query, ranked JOIN context_messages m ON m.id = ranked.id
    ORDER BY ranked.rank DESC, ranked.id DESC`;
}

interface SearchRow {
  sessionId: string;
  segmentOrdinal: number;
  seq: number;
  role: string;
  snippet: string;
}

interface SearchRow {
  sessionId: string;
  segmentOrdinal: number;
  seq: number;
  role: string;
  snippet: string;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
