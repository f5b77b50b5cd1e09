// Applies prisma/migrations at start-up without the Prisma CLI, recording each migration in
// `_prisma_migrations` exactly as Prisma Migrate does, so `prisma migrate status` agrees.
import { createHash, randomUUID } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../log.js';

/** Where the migrations live (prisma/migrations at the repository root). */
export const defaultMigrationsDir = fileURLToPath(new URL('../../../prisma/migrations', import.meta.url));

/** One connection the migrator runs on, holding the migration lock for the whole run. */
export interface MigrationConnection {
  /** Runs a script of several statements (simple query protocol). */
  exec(sql: string): Promise<void>;
  /** Runs one parameterized statement. */
  query<Row>(sql: string, params?: unknown[]): Promise<Row[]>;
}

export interface Migration {
  name: string;
  script: string;
  /** sha256 of the script, hex: the checksum Prisma stores. */
  checksum: string;
}

export class MigrationError extends Error {
  constructor(readonly migration: string, cause: unknown) {
    super(`migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'MigrationError';
  }
}

// The same key Prisma Migrate locks with, so a CLI deploy and the service never run at once.
export const migrationLockKey = 72707369;

const createTable = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

/** Reads the migration folders in name order (their names start with a timestamp). */
export async function readMigrations(dir = defaultMigrationsDir): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
  return Promise.all(
    names.map(async (name) => {
      const script = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, script, checksum: createHash('sha256').update(script).digest('hex') };
    }),
  );
}

/**
 * Applies pending migrations in order, each in its own transaction. The caller holds the
 * migration lock on `connection` (replicas starting together apply each migration once).
 * A failing migration is rolled back, not recorded, and stops the run. Returns the names applied.
 */
export async function applyMigrations(
  connection: MigrationConnection,
  migrations: Migration[],
  log: Logger,
): Promise<string[]> {
  await connection.exec(createTable);
  const rows = await connection.query<{ migration_name: string; checksum: string }>(
    `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const applied = new Map(rows.map((row) => [row.migration_name, row.checksum]));
  const done: string[] = [];
  for (const migration of migrations) {
    const checksum = applied.get(migration.name);
    if (checksum !== undefined) {
      if (checksum !== migration.checksum) {
        log.warn({ migration: migration.name }, 'migration-modified: applied migration differs from the file');
      }
      continue;
    }
    const startedAt = new Date();
    try {
      await connection.exec('BEGIN');
      await connection.exec(migration.script);
      await connection.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, started_at, applied_steps_count)
         VALUES ($1, $2, now(), $3, NULL, $4, 1)`,
        [randomUUID(), migration.checksum, migration.name, startedAt],
      );
      await connection.exec('COMMIT');
    } catch (error) {
      await connection.exec('ROLLBACK').catch(() => undefined);
      throw new MigrationError(migration.name, error);
    }
    log.info({ migration: migration.name }, 'migration-applied');
    done.push(migration.name);
  }
  return done;
}
