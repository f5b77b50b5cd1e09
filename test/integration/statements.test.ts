import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../prisma/generated/client.js';
import { statementsOn } from '../../src/adapters/storage/statements.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The hot statements on pg's pool (statements.ts): each text is parsed once per connection, and
// the server's cache of them stays bounded however many texts come.
describe('statements on pg', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection, so the server's prepared statements of "the" connection can be read back.
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  const prepared = async () =>
    (await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'hippo\\_%' ORDER BY prepare_time")).rows.map((row) => row.statement);

  it('prepares a statement once per connection and runs it again with new values', async () => {
    const statements = statementsOn(database.prisma, pool);
    const text = (n: number) => Prisma.sql`SELECT ${n}::int + 1 AS next`;
    expect(await statements.rows<{ next: number }>(text(1))).toEqual([{ next: 2 }]);
    expect(await statements.rows<{ next: number }>(text(41))).toEqual([{ next: 42 }]);
    expect(await prepared()).toEqual(['SELECT $1::int + 1 AS next']);
  });

  it('names at most 64 texts, and still runs every other one', async () => {
    const statements = statementsOn(database.prisma, pool);
    for (let index = 0; index < 80; index += 1) {
      expect(await statements.rows<{ n: number }>(Prisma.sql`SELECT ${index}::int AS ${Prisma.raw(`n${index}`)}`)).toEqual([{ [`n${index}`]: index }]);
    }
    expect(await prepared()).toHaveLength(64);
  });
});
