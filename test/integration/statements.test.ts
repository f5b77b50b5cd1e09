import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Prisma } from '../../prisma/generated/client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The hot statements on pg's pool (statements.ts): each text is parsed once per connection, and
// the server's cache of them stays bounded however many texts come. Each test loads statements.ts
// afresh (its names start empty) and has a pool of one connection, whose prepared statements it
// reads back.
describe('statements on pg', () => {
  let database: TestDatabase;
  const pools: pg.Pool[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  afterAll(async () => {
    await database.drop();
  });

  async function fresh() {
    vi.resetModules();
    const { statementsOn } = await import('../../src/adapters/storage/statements.js');
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    pool.on('error', () => undefined); // a dropped idle connection (the fault test)
    pools.push(pool);
    const prepared = async () =>
      (await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'hippo\\_%' ORDER BY prepare_time")).rows.map((row) => row.statement);
    return { pool, statements: statementsOn(database.prisma, pool), prepared };
  }

  it('prepares a statement once per connection and runs it again with new values', async () => {
    const { statements, prepared } = await fresh();
    const text = (n: number) => Prisma.sql`SELECT ${n}::int + 1 AS next`;
    expect(await statements.rows<{ next: number }>(text(1))).toEqual([{ next: 2 }]);
    expect(await statements.rows<{ next: number }>(text(41))).toEqual([{ next: 42 }]);
    expect(await prepared()).toEqual(['SELECT $1::int + 1 AS next']);
  });

  it('names at most 64 texts, and still runs every other one', async () => {
    const { statements, prepared } = await fresh();
    for (let index = 0; index < 80; index += 1) {
      expect(await statements.rows<{ n: number }>(Prisma.sql`SELECT ${index}::int AS ${Prisma.raw(`n${index}`)}`)).toEqual([{ [`n${index}`]: index }]);
    }
    expect(await prepared()).toHaveLength(64);
  });

  it('prepares a statement again on the connection that replaces a dropped one', async () => {
    const { pool, statements, prepared } = await fresh();
    const text = (n: number) => Prisma.sql`SELECT ${n}::int * 2 AS twice`;
    expect(await statements.rows<{ twice: number }>(text(2))).toEqual([{ twice: 4 }]);
    const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const lost = new Promise<void>((resolve) => pool.once('error', () => resolve()));
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    } finally {
      await admin.end();
    }
    await lost;
    expect(await statements.rows<{ twice: number }>(text(21))).toEqual([{ twice: 42 }]);
    expect(await prepared()).toEqual(['SELECT $1::int * 2 AS twice']);
  });
});
