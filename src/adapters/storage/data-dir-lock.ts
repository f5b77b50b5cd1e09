// One process at a time in a data directory: PGlite is a single-process database, and two
// processes opening the same files silently lose data. The holder writes a lock file with its pid
// (and, on Linux, the pid's start time, so a reused pid is not mistaken for the holder); a lock
// whose process is gone is taken over.
import { open, readFile, unlink } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../core/errors.js';

/** The lock file's name inside DATA_DIR. */
export const lockFileName = 'hippo.lock';

/** What the lock file records about its holder. */
interface LockRecord {
  pid: number;
  hostname: string;
  /** Start time of the process in clock ticks since boot (/proc/<pid>/stat), when known. */
  startTicks?: number;
}

/** A held lock; `release` removes the file if it is still ours. */
export interface DataDirLock {
  readonly path: string;
  release(): Promise<void>;
}

/**
 * Takes the lock of `dataDir` (which must exist) for this process. Throws ConfigError with one line
 * naming the holder when another live process holds it. `shownDir` is the directory as the
 * operator wrote it (e.g. "./data").
 */
export async function lockDataDir(dataDir: string, shownDir: string = dataDir): Promise<DataDirLock> {
  const path = join(dataDir, lockFileName);
  const mine: LockRecord = { pid: process.pid, hostname: hostname(), ...startTicksOf(process.pid) };
  // Three tries: a stale lock removed by us may be re-created by a racing process in between.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(`${JSON.stringify(mine)}\n`);
      await handle.close();
      return { path, release: () => releaseIfMine(path) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const raw = await readFile(path, 'utf8').catch(() => undefined);
    if (raw === undefined) continue; // released meanwhile
    const holder = parseRecord(raw);
    if (holder && holderIsAlive(holder)) {
      const where = holder.hostname !== mine.hostname ? ` on ${holder.hostname}` : '';
      throw new ConfigError(`${shownDir} is in use by pid ${holder.pid}${where}; stop it or set DATA_DIR (another directory) or DATABASE_URL (Postgres)`);
    }
    // The holder is gone (crash, kill -9): take over, unless the file changed since we read it.
    if ((await readFile(path, 'utf8').catch(() => undefined)) === raw) await unlink(path).catch(() => undefined);
  }
  throw new ConfigError(`${shownDir} is being locked by another process at this moment; try again`);
}

function parseRecord(raw: string): LockRecord | undefined {
  try {
    const value = JSON.parse(raw) as Partial<LockRecord>;
    if (typeof value.pid !== 'number' || typeof value.hostname !== 'string') return undefined;
    return { pid: value.pid, hostname: value.hostname, ...(typeof value.startTicks === 'number' ? { startTicks: value.startTicks } : {}) };
  } catch {
    return undefined; // a torn or foreign file: nobody we can wait for
  }
}

function holderIsAlive(holder: LockRecord): boolean {
  // Another machine (a shared volume): its processes cannot be checked from here, so it counts as alive.
  if (holder.hostname !== hostname()) return true;
  if (holder.pid === process.pid) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTicksOf(holder.pid).startTicks;
  // A different start time: the pid was reused by an unrelated process after the holder died.
  return holder.startTicks === undefined || now === undefined || now === holder.startTicks;
}

/** The process's start time from /proc (Linux); absent elsewhere. */
function startTicksOf(pid: number): { startTicks?: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command name (field 2) may contain spaces, so count from its closing paren.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? { startTicks: ticks } : {};
  } catch {
    return {};
  }
}

async function releaseIfMine(path: string): Promise<void> {
  const holder = parseRecord(await readFile(path, 'utf8').catch(() => ''));
  if (holder?.pid === process.pid && holder.hostname === hostname()) await unlink(path).catch(() => undefined);
}
