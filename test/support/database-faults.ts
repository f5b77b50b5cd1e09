// Database faults on real Postgres, as a failover does them: new connections refused
// (ALLOW_CONNECTIONS false) and the open ones dropped (pg_terminate_backend), for a while.
import pg from 'pg';
import { adminUrl } from './postgres-urls.js';

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Drops every open connection to `database` (they fail with 57P01); new ones still connect. */
export function dropConnections(database: string): Promise<void> {
  return admin(async (client) => {
    await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  });
}

/** Refuses new connections to `database` (55000) and drops the open ones, until `restore` is called. */
export async function takeDatabaseAway(database: string): Promise<{ restore(): Promise<void> }> {
  await admin(async (client) => {
    await client.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
    await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  });
  let restored = false;
  return {
    restore: async () => {
      if (restored) return;
      restored = true;
      await admin((client) => client.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`));
    },
  };
}

/** Takes the database away for `ms`, then gives it back. */
export async function outage(database: string, ms: number): Promise<void> {
  const away = await takeDatabaseAway(database);
  await new Promise((resolve) => setTimeout(resolve, ms));
  await away.restore();
}
