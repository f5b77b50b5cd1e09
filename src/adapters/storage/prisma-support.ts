// Small helpers the Prisma stores share: recognising lost races, the transaction client type, and
// building update data that Prisma's types accept under exactOptionalPropertyTypes.
import type { ModelCallRecord } from '../../core/store.js';
import { storableText } from '../../core/text-hygiene.js';
import pg from 'pg';
import { Prisma } from '../../../prisma/generated/client.js';

/**
 * True when a unique constraint refused a row: P2002 from the query builder; a raw statement's
 * refusal is P2010 ("raw query failed") carrying Postgres's 23505 from the driver adapter; a
 * statement sent on pg's pool (statements.ts) fails with pg's own error, code 23505.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return error.code === '23505';
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (error.code === 'P2002') return true;
  const cause = (error.meta?.['driverAdapterError'] as { cause?: { originalCode?: unknown; kind?: unknown } } | undefined)?.cause;
  return error.code === 'P2010' && (cause?.originalCode === '23505' || cause?.kind === 'UniqueConstraintViolation');
}

/** The client inside `prisma.$transaction(async (tx) => …)`. */
export type TransactionClient = Prisma.TransactionClient;

/**
 * Copies the named fields that are set. Callers' objects may carry more fields than the port
 * names (Prisma refuses unknown ones), and Prisma's input types do not accept explicit undefined.
 */
export function pickDefined<T extends object, K extends keyof T>(source: T, keys: readonly K[]): { [P in K]?: Exclude<T[P], undefined> } {
  const picked: { [P in K]?: Exclude<T[P], undefined> } = {};
  for (const key of keys) {
    const value = source[key];
    // TypeScript cannot narrow T[K] through the check; the value is defined here.
    if (value !== undefined) picked[key] = value as Exclude<T[K], undefined>;
  }
  return picked;
}

/**
 * A tsquery from what a person or the model typed (web-search syntax: "quoted phrases", -not, or)
 * in the `simple` configuration, every word of three characters or more a prefix: `simple` does
 * not stem, so "zebra" still finds "zebras" and "Tür" finds "Türen", in any language, and the GIN
 * indexes serve prefixes. A shorter word matches only itself: "a" as a prefix is nearly every
 * word of a space, and looking that up costs as much as reading the space.
 */
export function searchQuery(text: string): Prisma.Sql {
  // Every lexeme gets `:*`, then those of one or two characters lose it. The second pattern cannot
  // start at a closing quote: one is always followed by `:*` and then a space, `)` or the end.
  const prefixed = Prisma.sql`regexp_replace(websearch_to_tsquery('simple', ${text})::text, '(''(?:[^'']|'''')*'')', '\\1:*', 'g')`;
  return Prisma.sql`regexp_replace(${prefixed}, '''((?:[^'']|''''){1,2})'':\\*', '''\\1''', 'g')::tsquery`;
}

/**
 * The statement that stores one model call's usage row (R14): alone, or as a CTE of the statement
 * that stores the worker's answer (ContextStore.append), so the two are written together.
 */
export function insertModelCall(call: ModelCallRecord): Prisma.Sql {
  const { sessionId, segmentId, memoryRunId, role, model, promptTokens, cachedTokens, completionTokens, latencyMs, error } = call;
  return Prisma.sql`
    INSERT INTO model_calls (session_id, segment_id, memory_run_id, role, model, prompt_tokens, cached_tokens, completion_tokens, cache_write_tokens, latency_ms, error)
    VALUES (${sessionId}, ${segmentId}, ${memoryRunId}, ${role}, ${model}, ${promptTokens}, ${cachedTokens}, ${completionTokens}, ${call.cacheWriteTokens ?? null}::integer, ${Math.round(latencyMs)}, ${error === null ? null : storableText(error)})`;
}
