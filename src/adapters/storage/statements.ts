// The statements every step sends (a message stored, a steer taken, a tool call marked, the
// context loaded) and those of every woken session (its lease, the look for owed deliveries, the
// memory documents of its init messages) go straight to pg's pool on Postgres: through Prisma's
// raw query the same statement costs about four times the client CPU (bench/RESULTS.md, B3).
// Without a pool (PGlite) they run through Prisma, unchanged. Either way a caller gets the same
// rows: int8 as bigint and timestamps (stored as UTC, without a zone) as UTC dates, as Prisma
// reads them.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Prisma, PrismaClient } from '../../../prisma/generated/client.js';

/** One statement at a time, outside any transaction. */
export interface Statements {
  /** The rows the statement returns. */
  rows<Row>(statement: Prisma.Sql): Promise<Row[]>;
  /** How many rows the statement wrote. */
  run(statement: Prisma.Sql): Promise<number>;
}

const int8 = 20;
const timestamp = 1114;

/** pg's parsers, except the two types where Prisma reads differently. */
const prismaLikeTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === int8) return (text: string) => BigInt(text);
    if (oid === timestamp) return (text: string) => new Date(`${text.replace(' ', 'T')}Z`);
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

// Each statement's text is parsed and planned once per connection (a named prepared statement):
// the hot statements are long CTEs, and sending and parsing their text on every step cost both
// processes CPU. Their shapes are few; past `maxNamed` texts the rest go unnamed, so a statement
// built from a varying list cannot grow the server's per-connection cache without bound.
const maxNamed = 64;
const names = new Map<string, string>();

/** The name a statement's text is prepared under on every connection (undefined past the cap). */
export function nameOf(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= maxNamed) return known;
  const name = `hippo_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
  names.set(text, name);
  return name;
}

/** The statements of `prisma`'s database, on `pool` when it is Postgres's. */
export function statementsOn(prisma: PrismaClient, pool: pg.Pool | undefined): Statements {
  if (!pool) {
    return {
      rows: <Row>(statement: Prisma.Sql) => prisma.$queryRaw<Row[]>(statement),
      run: (statement) => prisma.$executeRaw(statement),
    };
  }
  const send = (statement: Prisma.Sql) => pool.query({ name: nameOf(statement.text), text: statement.text, values: statement.values, types: prismaLikeTypes });
  return {
    rows: async <Row>(statement: Prisma.Sql) => (await send(statement)).rows as Row[],
    run: async (statement) => (await send(statement)).rowCount ?? 0,
  };
}
