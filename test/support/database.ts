// An isolated, migrated Postgres database per test file, cloned from the run's template.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { createLogger } from '../../src/log.js';
import { adminUrl, templateDatabase, withDatabase } from './postgres-urls.js';

export interface TestDatabase extends Database {
  url: string;
  name: string;
  /** Closes the connections and drops the database. */
  drop(): Promise<void>;
}

/** Creates an empty database (no migrations); returns its URL and a drop function. */
export async function createEmptyDatabase(prefix = 'hippo_t'): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  return {
    url: withDatabase(adminUrl(), name),
    name,
    drop: () => adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

/** Clones the migrated template into a fresh database and opens it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `hippo_t_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}" TEMPLATE "${templateDatabase()}"`);
  const url = withDatabase(adminUrl(), name);
  const database = await openDatabase({ databaseUrl: url, dataDir: '/nonexistent', log: createLogger('silent') });
  return {
    ...database,
    url,
    name,
    drop: async () => {
      await database.close().catch(() => undefined);
      await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    // CREATE DATABASE … TEMPLATE fails while another session is connected to the template;
    // retry briefly (only the global setup ever connects to it).
    for (let attempt = 0; ; attempt += 1) {
      try {
        await client.query(sql);
        return;
      } catch (error) {
        if (attempt >= 20 || !String(error).includes('being accessed by other users')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await client.end();
  }
}

/**
 * Records the text of every statement sent on `pool` (its own `query`, wrapped) until `stop()`,
 * which puts the pool back as it was.
 */
export function recordStatements(pool: pg.Pool): { texts: string[]; stop(): void } {
  const query = pool.query.bind(pool);
  const texts: string[] = [];
  Object.assign(pool, {
    query: (...args: Parameters<typeof query>) => {
      texts.push(String((args[0] as { text?: string }).text ?? args[0]));
      return query(...args);
    },
  });
  return { texts, stop: () => void Object.assign(pool, { query }) };
}
