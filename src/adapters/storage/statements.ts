// The statements every step sends (a message stored, a steer taken, a tool call marked, the
// context loaded) go straight to pg's pool on Postgres: through Prisma's raw query the same
// statement costs about four times the client CPU (measured in bench/RESULTS.md, under B3).
// Without a pool (PGlite) they run through Prisma, unchanged. Either way a caller gets the same
// rows: int8 as bigint and timestamps (stored as UTC, without a zone) as UTC dates, as Prisma reads them.
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

/** The statements of `prisma`'s database, on `pool` when it is Postgres's. */
export function statementsOn(prisma: PrismaClient, pool: pg.Pool | undefined): Statements {
  if (!pool) {
    return {
      rows: <Row>(statement: Prisma.Sql) => prisma.$queryRaw<Row[]>(statement),
      run: (statement) => prisma.$executeRaw(statement),
    };
  }
  const send = (statement: Prisma.Sql) => pool.query({ text: statement.text, values: statement.values, types: prismaLikeTypes });
  return {
    rows: async <Row>(statement: Prisma.Sql) => (await send(statement)).rows as Row[],
    run: async (statement) => (await send(statement)).rowCount ?? 0,
  };
}
