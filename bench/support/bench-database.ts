// Databases for benchmarks: a fresh, migrated Postgres database (dropped at the end) or an
// embedded PGlite in a temporary directory, each with a counter of database round trips.
//
// How round trips are counted (Prisma's `$on('query')` is not available with driver adapters):
// - Postgres: every pg client the pool hands out (pool 'acquire' event, which both `pool.query`
//   and Prisma's transactions go through) gets its `query` method wrapped once. Each wrapped call
//   is one statement sent to the server and one round trip, BEGIN and COMMIT included.
// - PGlite: the instance's `query` is wrapped, and `transaction` counts its BEGIN and COMMIT plus
//   every `tx.query` inside. PGlite runs in-process, so a "round trip" is a call into the engine.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { embeddedOptions, openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { createLogger } from '../../src/log.js';

/** Counts statements by a short normalized form of their SQL. */
export class RoundTripCounter {
  total = 0;
  /** Milliseconds from sending statements to their results, summed (overlaps count twice). */
  totalMs = 0;
  readonly bySql = new Map<string, number>();

  record(sql: string): void {
    this.total += 1;
    const key = normalizeSql(sql) + (sourcesWanted ? ` @ ${storeCall.getStore() ?? '?'}` : '');
    this.bySql.set(key, (this.bySql.get(key) ?? 0) + 1);
  }

  /** Records a statement and adds the time until `result` settles. */
  timed<T>(sql: string, result: T): T {
    this.record(sql);
    if (result instanceof Promise) {
      const started = performance.now();
      const done = () => {
        this.totalMs += performance.now() - started;
      };
      result.then(done, done);
    }
    return result;
  }

  reset(): void {
    this.total = 0;
    this.totalMs = 0;
    this.bySql.clear();
  }

  /** The most frequent statements, most frequent first. */
  top(limit: number): Array<[string, number]> {
    return [...this.bySql.entries()].sort((left, right) => right[1] - left[1]).slice(0, limit);
  }
}

/** BENCH_STATEMENT_SOURCES=1: each statement is counted with the store method that sent it. */
const sourcesWanted = process.env['BENCH_STATEMENT_SOURCES'] === '1';
const storeCall = new AsyncLocalStorage<string>();

/** Names each store method's statements by the method (stores.context.append…): see sourcesWanted. */
export function labelStoreCalls(stores: Record<string, Record<string, unknown>>): void {
  for (const [storeName, store] of Object.entries(stores)) {
    for (const [method, value] of Object.entries(store)) {
      if (typeof value !== 'function') continue;
      const call = value as (...args: unknown[]) => unknown;
      store[method] = (...args: unknown[]) => storeCall.run(`${storeName}.${method}`, () => call.apply(store, args));
    }
  }
}

/** First words of a statement with parameters and whitespace collapsed, for grouping. */
// The counter's own CPU counts as the agent's: each distinct text is normalized once.
const normalized = new Map<string, string>();

function normalizeSql(sql: string): string {
  let key = normalized.get(sql);
  if (key === undefined) {
    key = normalizeText(sql);
    if (normalized.size < 1_000) normalized.set(sql, key);
  }
  return key;
}

function normalizeText(sql: string): string {
  const text = sql.replace(/\s+/g, ' ').replace(/\$\d+/g, '?').trim();
  const table = /\b(?:FROM|INTO|UPDATE)\s+"?(?:public"?\."?)?"?([a-z_]+)"?/i.exec(text)?.[1];
  const verb = text.split(' ')[0]?.toUpperCase() ?? '';
  if (verb === 'BEGIN' || verb === 'COMMIT' || verb === 'ROLLBACK') return verb;
  const locking = /FOR UPDATE/i.test(text) ? ' … FOR UPDATE' : '';
  const conflict = /ON CONFLICT/i.test(text) ? ' … ON CONFLICT' : '';
  return `${verb} ${table ?? text.slice(0, 40)}${conflict}${locking}`;
}

// Databases still open, dropped if the benchmark is interrupted (Ctrl-C, kill).
const open = new Set<BenchDatabase>();
let handlersInstalled = false;

function track<T extends BenchDatabase>(database: T): T {
  open.add(database);
  if (!handlersInstalled) {
    handlersInstalled = true;
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        console.error(`\n${signal}: dropping ${open.size} benchmark database(s)…`);
        void Promise.allSettled([...open].map((item) => item.drop())).finally(() => process.exit(130));
      });
    }
  }
  const drop = database.drop;
  database.drop = async () => {
    open.delete(database);
    await drop();
  };
  return database;
}

export interface BenchDatabase {
  kind: 'postgres' | 'pglite';
  /** Connection URL (Postgres only): for a service started in another process. */
  url?: string;
  database: Database;
  roundTrips: RoundTripCounter;
  /** Closes the connections and removes the database (Postgres) or its directory (PGlite). */
  drop(): Promise<void>;
}

/** Where benchmarks may create and drop databases (default: the local server's `test` db). */
export function adminDatabaseUrl(): string {
  return process.env['BENCH_DATABASE_URL'] ?? 'postgresql://root@127.0.0.1:5432/test';
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminDatabaseUrl() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A new Postgres database, migrated by openDatabase. `durable: false` sets synchronous_commit
 * off for this database only: commits no longer wait for the WAL flush (fsync), which separates
 * the agent's own cost from the disk's.
 */
export async function createPostgresBenchDatabase(
  options: { durable?: boolean; /** Sees every statement a pooled client sends. */ onStatement?: (sql: string) => void } = {},
): Promise<BenchDatabase & { url: string }> {
  const name = `hippo_bench_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  if (options.durable === false) await adminQuery(`ALTER DATABASE "${name}" SET synchronous_commit TO off`);
  const url = new URL(adminDatabaseUrl());
  url.pathname = `/${name}`;
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-bench-'));
  const drop = async () => {
    await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await rm(dataDir, { recursive: true, force: true });
  };
  let opened: BenchDatabase & { url: string };
  try {
    opened = await openPostgresBenchDatabase(url.toString(), options);
  } catch (error) {
    await drop().catch(() => undefined);
    throw error;
  }
  return track({
    ...opened,
    drop: async () => {
      await opened.drop();
      await drop();
    },
  });
}

/**
 * A connection to an existing Postgres bench database (another process created it), counting
 * round trips as createPostgresBenchDatabase does; drop() only closes the connections.
 */
export async function openPostgresBenchDatabase(
  url: string,
  options: { onStatement?: (sql: string) => void } = {},
): Promise<BenchDatabase & { url: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-bench-'));
  let database: Database;
  try {
    database = await openDatabase({ databaseUrl: url, dataDir, log: createLogger('silent') });
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const roundTrips = new RoundTripCounter();
  const pool = database.pool;
  if (!pool) throw new Error('openDatabase returned no pool for Postgres');
  const wrapped = new WeakSet<pg.PoolClient>();
  // Both pools: the agent's and the intake's (the ack's one statement).
  const counted = (client: pg.PoolClient) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    const counting = (...args: unknown[]) => {
      const first = args[0];
      const sql = typeof first === 'string' ? first : String((first as { text?: unknown } | undefined)?.text ?? '');
      options.onStatement?.(sql);
      // pool.query() passes a callback (no promise comes back): time the statement until it is called.
      const callback = args.at(-1);
      if (typeof callback !== 'function') return roundTrips.timed(sql, query(...args));
      let settle = () => {};
      roundTrips.timed(sql, new Promise<void>((resolve) => (settle = resolve)));
      return query(...args.slice(0, -1), (...results: unknown[]) => {
        settle();
        (callback as (...parameters: unknown[]) => void)(...results);
      });
    };
    Object.assign(client, { query: counting });
  };
  pool.on('acquire', counted);
  database.ackPool?.on('acquire', counted);
  return {
    kind: 'postgres',
    url,
    database,
    roundTrips,
    drop: async () => {
      await database.close().catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** An embedded PGlite under a temporary directory, migrated by openDatabase. */
export async function createPgliteBenchDatabase(options: { /** Sees every statement sent. */ onStatement?: (sql: string) => void } = {}): Promise<BenchDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-bench-pglite-'));
  // Started as the service starts it (src/adapters/storage/database.ts).
  const pglite = await PGlite.create(join(dataDir, 'pglite'), embeddedOptions(PGlite.defaultStartParams));
  const database = await openDatabase({ dataDir, log: createLogger('silent'), pglite });
  const roundTrips = new RoundTripCounter();
  type Query = (sql: string, ...rest: unknown[]) => Promise<unknown>;
  type Transaction = (callback: (tx: { query: Query }) => Promise<unknown>) => Promise<unknown>;
  const query = pglite.query.bind(pglite) as unknown as Query;
  const transaction = pglite.transaction.bind(pglite) as unknown as Transaction;
  const countingQuery: Query = (sql, ...rest) => {
    options.onStatement?.(sql);
    return roundTrips.timed(sql, query(sql, ...rest));
  };
  const countingTransaction: Transaction = (callback) => {
    roundTrips.record('BEGIN');
    return transaction((tx) => {
      const inner = tx.query.bind(tx);
      const counted: Query = (sql, ...rest) => {
        options.onStatement?.(sql);
        return roundTrips.timed(sql, inner(sql, ...rest));
      };
      Object.assign(tx, { query: counted });
      return callback(tx);
    }).finally(() => roundTrips.record('COMMIT'));
  };
  Object.assign(pglite, { query: countingQuery, transaction: countingTransaction });
  return track({
    kind: 'pglite',
    database,
    roundTrips,
    drop: async () => {
      await database.close().catch(() => undefined);
      await pglite.close().catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    },
  });
}

/**
 * CPU time (ms) each Postgres backend serving the database at `url` has used so far, by pid: read from
 * /proc, so only for a server on this machine (an empty map elsewhere). Background processes (WAL
 * writer, checkpointer, autovacuum) are not counted.
 */
export async function backendCpuMs(url: string): Promise<Map<number, number>> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const client = new pg.Client({ connectionString: adminDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
    const cpu = new Map<number, number>();
    for (const { pid } of rows) {
      try {
        // Fields 14 and 15 of /proc/PID/stat: user and system time in clock ticks (100 per second).
        const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ');
        cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
      } catch {
        // Not on this machine, or gone.
      }
    }
    return cpu;
  } finally {
    await client.end();
  }
}

/** Backend CPU used between two `backendCpuMs` readings (backends started since count whole). */
export function backendCpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}
