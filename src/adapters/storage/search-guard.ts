// What bounds a full-text search (R15, docs/security.md "Security and limits"): each searcher (a person, or a
// session's model through memory_search) may run `perMinute` search statements a minute, counted in
// this process's memory; and each statement runs under a statement timeout, in a transaction of its
// own, so a search that would hold a backend longer is cancelled and the person told why.
import { SearchLimitError } from '../../core/errors.js';
import type { Prisma, PrismaClient } from '../../../prisma/generated/client.js';
import { hasSqlState } from './storage-errors.js';

/** The bounds of searches; the defaults are the service's (docs/security.md). */
export interface SearchBounds {
  /** Search statements one searcher may run in a minute (a person's `memory search` runs two). */
  perMinute: number;
  /** Longest a search statement may run (ms) before Postgres cancels it. */
  timeoutMs: number;
}

export const defaultSearchBounds: SearchBounds = { perMinute: 20, timeoutMs: 5_000 };

/** Characters of a text that are searchable: the generated search_vector columns use the same. */
export const searchableChars = 100_000;

/** Matches ranked per search: the newest; ranking reads each one's stored vector. */
export const rankedCandidates = 500;

/** What a person is told when a search was cancelled for its time. */
export const searchTooSlowText = 'The search took too long and was stopped; try more specific words (longer, rarer ones).';

/**
 * The planner's settings for search statements. Its cost model does not count reading a row's
 * out-of-line (TOASTed) vector, so a table of few, large messages looks cheap to read whole and
 * check row by row: without sequential scans, matches come from the GIN index.
 */
export const searchSettings: readonly string[] = ['SET LOCAL enable_seqscan = off'];

/** Buckets past this many are pruned of those that refilled (searchers gone quiet). */
const maxTracked = 10_000;

export class SearchGuard {
  /** Per searcher: tokens left and when they were counted (a token bucket). */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(readonly bounds: SearchBounds = defaultSearchBounds, private readonly now: () => number = Date.now) {}

  /** Takes one search from `searcher`'s allowance, or refuses it with the wait in the message. */
  admit(searcher: string): void {
    const { perMinute } = this.bounds;
    const now = this.now();
    const refill = perMinute / 60_000;
    const bucket = this.buckets.get(searcher) ?? { tokens: perMinute, at: now };
    const tokens = Math.min(perMinute, bucket.tokens + (now - bucket.at) * refill);
    if (tokens < 1) {
      const seconds = Math.ceil((1 - tokens) / refill / 1000);
      this.buckets.set(searcher, { tokens, at: now });
      throw new SearchLimitError(`Too many searches in a row (${perMinute} a minute); try again in ${seconds} s.`);
    }
    this.buckets.set(searcher, { tokens: tokens - 1, at: now });
    if (this.buckets.size > maxTracked) this.prune(now, refill);
  }

  /** Runs one search statement under the statement timeout; a cancelled one is a SearchLimitError. */
  async query<Row>(prisma: PrismaClient, statement: Prisma.Sql): Promise<Row[]> {
    const { timeoutMs } = this.bounds;
    try {
      // SET LOCAL lasts the transaction: the connection goes back to the pool without the timeout.
      // Prisma's own transaction limits sit above the statement's, so Postgres is the one to stop it.
      return await prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
        for (const setting of searchSettings) await tx.$executeRawUnsafe(setting);
        return tx.$queryRaw<Row[]>(statement);
      }, { timeout: timeoutMs + 10_000, maxWait: 10_000 });
    } catch (error) {
      if (hasSqlState(error, '57014')) throw new SearchLimitError(searchTooSlowText);
      throw error;
    }
  }

  private prune(now: number, refill: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * refill >= this.bounds.perMinute) this.buckets.delete(key);
    }
  }
}
