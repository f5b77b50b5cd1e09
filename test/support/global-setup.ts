// Runs once per test run: checks Postgres is reachable and builds a migrated template database,
// so each test file can clone its own isolated database in milliseconds (test/support/database.ts).
import pg from 'pg';
import { openDatabase } from '../../src/adapters/storage/database.js';
import { createLogger } from '../../src/log.js';
import { adminUrl, templateDatabase, withDatabase } from './postgres-urls.js';

export async function setup(): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: adminUrl(), connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`tests need Postgres at ${adminUrl()} (set TEST_DATABASE_URL): ${String(error)}`);
  }
  const template = templateDatabase();
  await admin.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${template}"`);
  const database = await openDatabase({
    databaseUrl: withDatabase(adminUrl(), template),
    dataDir: '/nonexistent',
    log: createLogger('silent'),
  });
  await database.close();
  await admin.end();
  return async () => {
    const cleanup = new pg.Client({ connectionString: adminUrl() });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
    await cleanup.end();
  };
}
