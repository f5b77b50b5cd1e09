import { execFile } from 'node:child_process';
import { cp, mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/storage/database.js';
import { defaultMigrationsDir, MigrationError, readMigrations } from '../../src/adapters/storage/migrator.js';
import { createLogger } from '../../src/log.js';
import { createEmptyDatabase } from '../support/database.js';
import { repoRoot, startScript, type RunningProcess } from '../support/processes.js';

const silent = createLogger('silent');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The process's exit, or a failure naming what it printed when it is still running after `ms`. */
async function exitWithin(running: RunningProcess, ms: number): Promise<{ code: number | null }> {
  const timeout = new Promise<never>((_resolve, reject) =>
    setTimeout(() => reject(new Error(`still running after ${ms} ms; stderr:\n${running.stderr()}\nstdout:\n${running.lines.join('\n')}`)), ms).unref(),
  );
  return Promise.race([running.exited, timeout]);
}

async function appliedMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ migration_name: string }>(
      'SELECT migration_name FROM "_prisma_migrations" ORDER BY migration_name',
    );
    return result.rows.map((row) => row.migration_name);
  } finally {
    await client.end();
  }
}

describe('npm start on the embedded database', () => {
  it('boots on PGlite, applies migrations, answers /healthz; a second start applies nothing', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-pglite-'));
    const env = { DATA_DIR: dataDir, PORT: '0' };

    const first = startScript('src/main.ts', env);
    const started = await first.waitForLog(/^service-started/, 40_000);
    const applied = first.lines.filter((line) => line.includes('"migration-applied"'));
    expect(applied.length).toBe((await readMigrations()).length);
    const health = await fetch(`http://127.0.0.1:${String(started['port'])}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${String(started['port'])}/readyz`);
    expect(ready.status).toBe(200);
    first.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const second = startScript('src/main.ts', env);
    const storage = await second.waitForLog(/^storage-ready$/, 40_000);
    expect(storage['storage']).toBe('pglite');
    expect(storage['migrationsApplied']).toBe(0);
    await second.waitForLog(/^service-started/, 20_000);
    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 90_000);

  it('refuses a second process on the same DATA_DIR with one line naming the holder, and takes over after a crash', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-pglite-lock-'));
    const started: RunningProcess[] = [];
    const start = (script: string, env: Record<string, string>) => {
      const running = startScript(script, env);
      started.push(running);
      return running;
    };
    cleanups.push(async () => {
      for (const running of started) running.kill('SIGKILL');
    });
    const first = start('src/main.ts', { DATA_DIR: dataDir, PORT: '0' });
    const ready = await first.waitForLog(/^service-started/, 40_000);
    const holder = String(first.child.pid);

    const second = start('src/main.ts', { DATA_DIR: dataDir, PORT: '0' });
    expect((await exitWithin(second, 20_000)).code).toBe(1);
    expect(second.stderr()).toBe(`${dataDir} is in use by pid ${holder}; stop it or set DATA_DIR (another directory) or DATABASE_URL (Postgres)\n`);
    expect(second.lines.some((line) => line.includes('storage-ready'))).toBe(false);
    // The terminal chat on the same directory (the usual mistake) is refused the same way.
    const chat = start('src/chat.ts', { DATA_DIR: dataDir, OPENAI_API_KEY: 'k', MODEL: 'm', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' });
    expect((await exitWithin(chat, 20_000)).code).toBe(1);
    expect(chat.stderr()).toContain(`is in use by pid ${holder}`);
    // The holder was not disturbed.
    expect((await fetch(`http://127.0.0.1:${String(ready['port'])}/readyz`)).status).toBe(200);

    // A holder killed without cleaning up leaves a stale lock: the next start takes it over.
    first.kill('SIGKILL');
    await first.exited;
    const third = start('src/main.ts', { DATA_DIR: dataDir, PORT: '0' });
    await third.waitForLog(/^service-started/, 40_000);
    third.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
  }, 120_000);
});

describe('npm start on Postgres', () => {
  it('exits non-zero with one clear line when the database port is closed', async () => {
    const began = Date.now();
    const run = startScript('src/main.ts', { DATABASE_URL: 'postgresql://root:hunter2@127.0.0.1:1/nothing', PORT: '0' });
    const { code } = await run.exited;
    expect(code).not.toBe(0);
    expect(Date.now() - began).toBeLessThan(10_000);
    const lines = run.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^database: cannot connect to postgresql:\/\/root:\*\*\*@127\.0\.0\.1:1\/nothing/);
    expect(run.stderr()).not.toContain('hunter2');
  });

  it('exits non-zero naming each invalid variable', async () => {
    const run = startScript('src/main.ts', { PORT: 'abc', MEMORY_SCOPE: 'planet' });
    expect((await run.exited).code).toBe(1);
    expect(run.stderr()).toMatch(/^config: PORT .*\nconfig: MEMORY_SCOPE .*\n$/);
  });

  it('applies each migration once when two services start at the same moment', async () => {
    const database = await createEmptyDatabase();
    cleanups.push(database.drop);
    const env = { DATABASE_URL: database.url, PORT: '0' };
    const services = [startScript('src/main.ts', env), startScript('src/main.ts', env)];
    const starts = await Promise.all(services.map((service) => service.waitForLog(/^service-started/, 40_000)));
    expect(starts).toHaveLength(2);
    const appliedLines = services.flatMap((service) => service.lines.filter((line) => line.includes('"migration-applied"')));
    const migrations = await readMigrations();
    expect(appliedLines).toHaveLength(migrations.length);
    expect(await appliedMigrations(database.url)).toEqual(migrations.map((migration) => migration.name));
    for (const service of services) service.kill('SIGTERM');
    for (const service of services) expect((await service.exited).code).toBe(0);
  }, 90_000);

  it('stops cleanly (exit 0) when SIGTERM arrives while it is still starting', async () => {
    const database = await createEmptyDatabase();
    cleanups.push(database.drop);
    const service = startScript('src/main.ts', { DATABASE_URL: database.url, PORT: '0' });
    // Migrations are applied inside start-up, before the service is up.
    await service.waitForLog(/^migration-applied/, 40_000);
    service.kill('SIGTERM');
    expect((await service.exited).code).toBe(0);
    expect(service.lines.some((line) => line.includes('"service-stopped"'))).toBe(true);
  }, 60_000);

  it('stops at a broken migration with its SQL error and does not record it', async () => {
    const database = await createEmptyDatabase();
    cleanups.push(database.drop);
    const dir = await mkdtemp(join(tmpdir(), 'hippo-migrations-'));
    await cp(defaultMigrationsDir, dir, { recursive: true });
    await mkdir(join(dir, '29991231000000_broken'));
    await writeFile(join(dir, '29991231000000_broken', 'migration.sql'), 'CREATE TABLE ok_table (id int);\nALTER TABLE no_such_table ADD COLUMN x int;\n');

    const attempt = openDatabase({ databaseUrl: database.url, dataDir: dir, log: silent, migrationsDir: dir });
    await expect(attempt).rejects.toThrow(MigrationError);
    await expect(attempt).rejects.toThrow(/29991231000000_broken.*relation "no_such_table" does not exist/);

    const applied = await appliedMigrations(database.url);
    expect(applied).not.toContain('29991231000000_broken');
    expect(applied).toHaveLength((await readMigrations()).length);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const table = await client.query("SELECT to_regclass('public.ok_table') AS t");
    await client.end();
    expect(table.rows[0].t).toBeNull(); // the whole migration rolled back
  });

  it.runIf(process.env['PRISMA_SCHEMA_ENGINE_BINARY'])(
    'leaves a database that `prisma migrate status` reports up to date',
    async () => {
      const database = await createEmptyDatabase();
      cleanups.push(database.drop);
      const opened = await openDatabase({ databaseUrl: database.url, dataDir: '/nonexistent', log: silent });
      await opened.close();
      const { stdout } = await promisify(execFile)('npx', ['prisma', 'migrate', 'status'], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: database.url },
      });
      expect(stdout).toContain('Database schema is up to date!');
    },
    60_000,
  );
});

describe('the embedded database', () => {
  it('applies migrations to a fresh PGlite and serves Prisma queries', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-pglite-'));
    const database = await openDatabase({ dataDir, log: silent });
    expect(database.kind).toBe('pglite');
    expect(database.appliedMigrations.length).toBeGreaterThan(0);
    const space = await database.prisma.memorySpace.create({
      data: { platform: 'console', workspaceId: 'local', scope: 'channel', scopeKey: 'c1' },
    });
    const session = await database.prisma.session.create({
      data: { platform: 'console', workspaceId: 'local', channelId: 'c1', threadKey: 't1', memorySpaceId: space.id },
    });
    expect(await database.prisma.session.count()).toBe(1);
    expect(session.paused).toBe(false);
    await database.close();
  });
});
