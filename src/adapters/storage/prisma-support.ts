// Small helpers the Prisma stores share: recognising lost races, the transaction client type, and
// building update data that Prisma's types accept under exactOptionalPropertyTypes.
import { Prisma } from '../../../prisma/generated/client.js';

/** True when a unique constraint refused a row (Prisma P2002; the driver adapters map 23505 to it). */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';
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
 * in the `simple` configuration, every word a prefix: `simple` does not stem, so "zebra" still
 * finds "zebras" and "Tür" finds "Türen", in any language, and the GIN indexes serve prefixes.
 */
export function searchQuery(text: string): Prisma.Sql {
  return Prisma.sql`regexp_replace(websearch_to_tsquery('simple', ${text})::text, '(''(?:[^'']|'''')*'')', '\\1:*', 'g')::tsquery`;
}
