// The global setup of the projects that need Postgres (integration, chaos; the unit project needs
// no database). Runs once per test run however many projects use it: finds or starts a Postgres
// server (test/support/postgres-server.ts), publishes it as TEST_DATABASE_URL to the test workers,
// and builds a migrated template database, so each test file can clone its own isolated database
// in milliseconds (test/support/database.ts).
import pg from 'pg';
import { openDatabase } from '../../src/adapters/storage/database.js';
import { createLogger } from '../../src/log.js';
import { findOrStartPostgres } from './postgres-server.js';
import { templateDatabase, withDatabase } from './postgres-urls.js';

interface SharedSetup {
  users: number;
  ready: Promise<{ url: string; stop(): Promise<void> }>;
}

// Each project calls setup() and its teardown; the first builds, the last tears down.
const sharedKey = Symbol.for('hippo.test.postgres');
const registry = globalThis as unknown as Record<symbol, SharedSetup | undefined>;

export async function setup(): Promise<() => Promise<void>> {
  let shared = registry[sharedKey];
  if (!shared) {
    shared = { users: 0, ready: prepare() };
    registry[sharedKey] = shared;
  }
  shared.users += 1;
  const current = shared;
  await current.ready;
  return async () => {
    current.users -= 1;
    if (current.users > 0) return;
    registry[sharedKey] = undefined;
    await (await current.ready).stop();
  };
}

async function prepare(): Promise<{ url: string; stop(): Promise<void> }> {
  const server = await findOrStartPostgres(process.env, (line) => process.stdout.write(`${line}\n`));
  // Test workers are started after this and inherit the environment.
  process.env['TEST_DATABASE_URL'] = server.url;
  const template = templateDatabase();
  try {
    await adminQuery(server.url, `DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
    await adminQuery(server.url, `CREATE DATABASE "${template}"`);
    const database = await openDatabase({ databaseUrl: withDatabase(server.url, template), dataDir: '/nonexistent', log: createLogger('silent') });
    await database.close();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    url: server.url,
    stop: async () => {
      await adminQuery(server.url, `DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`).catch(() => undefined);
      await server.stop();
    },
  };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
