// Opens storage: Postgres through @prisma/adapter-pg when DATABASE_URL is set, else an embedded
// PGlite under DATA_DIR. Applies pending migrations before anything else uses the database.
import { isTransientDatabaseError } from './storage-errors.js';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import type { Logger } from '../../log.js';
import { redactUrl } from '../../log.js';
import { PrismaClient } from '../../../prisma/generated/client.js';
import { prioritizeAcks } from './ack-priority.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { applyMigrations, migrationLockKey, readMigrations, type MigrationConnection } from './migrator.js';

export type { PrismaClient };

/** An open database: the Prisma client plus what the service needs beside it. */
export interface Database {
  kind: 'postgres' | 'pglite';
  prisma: PrismaClient;
  /** The pg pool (Postgres only): LISTEN/NOTIFY and raw maintenance use it. */
  pool?: pg.Pool;
  /** A small pool of its own for the intake statement (Postgres only): acks never queue behind agent work. */
  ackPool?: pg.Pool;
  /** Names of the migrations applied by this start-up. */
  appliedMigrations: string[];
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  log: Logger;
  /** Defaults to prisma/migrations. */
  migrationsDir?: string;
  /** An already open PGlite instance to use instead of opening DATA_DIR (tests share one). */
  pglite?: PGlite;
}

// Prisma's defaults (2 s to get a connection, 5 s per transaction) fail short transactions on a
// busy machine; waiting a little longer is better than failing a run.
const transactionOptions = { maxWait: 10_000, timeout: 30_000 };

/** Connections of the intake pool: each ack is one short statement, so a few carry hundreds per second. */
const ackPoolSize = 4;

/**
 * How the embedded database is started. PGlite's default shared_buffers (128 MB) only duplicates the
 * operating system's file cache for a single-process database of this size, and costs ~170 MB of
 * resident memory: 16 MB keeps the hot pages (B4 on PGlite measured no slower; bench/RESULTS.md).
 */
export function embeddedOptions(defaultStartParams: readonly string[]): { startParams: string[] } {
  return { startParams: [...defaultStartParams, '-c', 'shared_buffers=16MB'] };
}

export class DatabaseError extends Error {
  override name = 'DatabaseError';
}

/** Opens the database and applies pending migrations. Throws DatabaseError/MigrationError. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const migrations = await readMigrations(options.migrationsDir);
  if (options.databaseUrl) return openPostgresRetrying(options.databaseUrl, options, migrations);
  return openPglite(options, migrations);
}

/** Attempts at start-up when the connection drops under us (a failover, a restart of the server). */
const startupAttempts = 5;

/** A connection dropped while migrating is tried again (the lock and the migrations are redone). */
async function openPostgresRetrying(url: string, options: OpenDatabaseOptions, migrations: Awaited<ReturnType<typeof readMigrations>>): Promise<Database> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await openPostgres(url, options, migrations);
    } catch (error) {
      if (attempt >= startupAttempts || error instanceof DatabaseError || !isTransientDatabaseError(error)) throw error;
      options.log.warn({ err: error instanceof Error ? error.message : String(error), attempt }, 'database-open-retry');
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

async function openPostgres(
  url: string,
  options: OpenDatabaseOptions,
  migrations: Awaited<ReturnType<typeof readMigrations>>,
): Promise<Database> {
  // Sessions, the outbox sender, inbound acks and LISTEN share the pool: leave room for all of them.
  // A burst (many threads at once, recovery after a restart) queues for a connection: it waits
  // as long as a transaction may, instead of failing runs after 5 s (B3).
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: transactionOptions.timeout, max: 20 });
  // An idle client error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', (error) => options.log.warn({ err: error.message }, 'database-pool-error'));
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    const reason = error instanceof Error ? error.message || error.name : String(error);
    throw new DatabaseError(`database: cannot connect to ${redactUrl(url)} (${reason})`);
  }
  // A checked-out client has no pool listener: a connection dropped between two statements must be
  // an error of the statement that meets it, not an unhandled 'error' event that ends the process.
  client.on('error', (error) => options.log.warn({ err: error.message }, 'database-migration-connection-lost'));
  let applied: string[];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockKey]);
    const connection: MigrationConnection = {
      exec: async (sql) => void (await client.query(sql)),
      query: async (sql, params) => (await client.query(sql, params)).rows,
    };
    applied = await applyMigrations(connection, migrations, options.log);
  } catch (error) {
    client.release(true);
    await pool.end().catch(() => undefined);
    throw error;
  }
  try {
    await client.query('SELECT pg_advisory_unlock($1)', [migrationLockKey]);
    client.release();
  } catch (error) {
    // The session (and its lock) is gone with its connection: the migrations are applied.
    client.release(true);
    if (!isTransientDatabaseError(error)) throw error;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions });
  // Connections are opened on first use: an ingest-less process (a worker) opens none.
  const ackPool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: transactionOptions.timeout, max: ackPoolSize });
  ackPool.on('error', (error) => options.log.warn({ err: error.message }, 'database-pool-error'));
  return {
    kind: 'postgres',
    prisma,
    pool,
    ackPool,
    appliedMigrations: applied,
    ping: async () => void (await pool.query('SELECT 1')),
    close: async () => {
      await prisma.$disconnect();
      await Promise.all([pool.end(), ackPool.end()]);
    },
  };
}

async function openPglite(
  options: OpenDatabaseOptions,
  migrations: Awaited<ReturnType<typeof readMigrations>>,
): Promise<Database> {
  let db = options.pglite;
  const owned = !db;
  let lock: DataDirLock | undefined;
  if (!db) {
    // PGlite is single-process: a second process on the same files would lose data silently.
    await mkdir(resolve(options.dataDir), { recursive: true });
    lock = await lockDataDir(resolve(options.dataDir), options.dataDir);
    const dir = resolve(join(options.dataDir, 'pglite'));
    try {
      await mkdir(dir, { recursive: true });
      // Loaded only for the embedded database (a deployment on Postgres never needs it).
      const { PGlite: EmbeddedPostgres } = await import('@electric-sql/pglite');
      db = await EmbeddedPostgres.create(dir, embeddedOptions(EmbeddedPostgres.defaultStartParams));
    } catch (error) {
      await lock.release();
      throw error;
    }
  }
  const pglite = db;
  // PGlite is a single session in this process: no lock is needed (and none would block).
  const connection: MigrationConnection = {
    exec: async (sql) => void (await pglite.exec(sql)),
    query: async <Row>(sql: string, params?: unknown[]) => (await pglite.query<Row>(sql, params)).rows,
  };
  let applied: string[];
  try {
    applied = await applyMigrations(connection, migrations, options.log);
    // Under the DATA_DIR lock no other process uses these files: a lease still held belongs to a
    // process that died (Ctrl-C, kill -9), so it counts as expired now and start-up recovery
    // resumes its session at once instead of after the lease TTL.
    if (lock) await pglite.query('UPDATE session_leases SET expires_at = now() WHERE NOT released AND expires_at > now()');
  } catch (error) {
    if (owned) await pglite.close().catch(() => undefined);
    await lock?.release();
    throw error;
  }
  const { PrismaPGlite } = await import('pglite-prisma-adapter');
  // Statements of a platform's ack go ahead of agent work on the one PGlite connection.
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(prioritizeAcks(pglite)), transactionOptions });
  return {
    kind: 'pglite',
    prisma,
    appliedMigrations: applied,
    ping: async () => void (await pglite.query('SELECT 1')),
    close: async () => {
      await prisma.$disconnect();
      if (owned) await pglite.close();
      await lock?.release();
    },
  };
}
