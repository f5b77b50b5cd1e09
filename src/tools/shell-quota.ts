// The workspace quota around a shell command. RLIMIT_FSIZE bounds one file, not many: twenty files
// under the limit each would fill the disk that may hold the database. So the workspace is
// measured while the command runs (it is killed once it grows past the quota), and what it
// created is removed afterwards when the workspace ended up over the quota.
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { isErrorCode } from './error-code.js';
import { workspaceUsage, type WorkspaceLimits, type WorkspaceUsage } from './workspace-quota.js';

/** The workspace before a command: its usage and the entries it held (relative paths). */
export interface WorkspaceSnapshot {
  usage: WorkspaceUsage;
  /** Null when there were more entries than the quota allows (then nothing is removed after). */
  entries: Set<string> | null;
}

/** Records the workspace before a command (at most maxFiles + 1 entries are looked at). */
export async function snapshotWorkspace(workspace: string, limits: WorkspaceLimits): Promise<WorkspaceSnapshot> {
  const usage = await workspaceUsage(workspace, limits.maxFiles + 1);
  if (!usage.complete) return { usage, entries: null };
  return { usage, entries: new Set(await entriesBelow(workspace, limits.maxFiles + 1)) };
}

/**
 * True when the workspace is over its quota and has grown past where the command found it: a
 * workspace already over the quota may still run `rm`.
 */
export function grewPastQuota(usage: WorkspaceUsage, before: WorkspaceUsage, limits: WorkspaceLimits): boolean {
  const tooLarge = usage.bytes > limits.maxBytes && usage.bytes > before.bytes;
  const tooMany = (usage.files > limits.maxFiles || !usage.complete) && usage.files > before.files;
  return tooLarge || tooMany;
}

/** Measures the workspace now: true when the command grew it past its quota. */
export async function overQuotaSince(workspace: string, before: WorkspaceSnapshot, limits: WorkspaceLimits): Promise<boolean> {
  return grewPastQuota(await workspaceUsage(workspace, limits.maxFiles + 1), before.usage, limits);
}

/**
 * After a command that left the workspace grown past its quota: removes every entry the command
 * created (not those it changed); returns how many top-most new entries were removed.
 */
export async function removeCreatedEntries(workspace: string, before: WorkspaceSnapshot): Promise<number> {
  const kept = before.entries;
  if (!kept) return 0;
  let removed = 0;
  const pending = [''];
  while (pending.length > 0) {
    const relative = pending.pop() ?? '';
    for (const entry of await readdir(path.join(workspace, relative), { withFileTypes: true }).catch(() => [])) {
      const entryPath = path.join(relative, entry.name);
      if (!kept.has(entryPath)) {
        // The command's processes are gone (its namespace died with it): nothing swaps paths now.
        await rm(path.join(workspace, entryPath), { recursive: true, force: true });
        removed += 1;
      } else if (entry.isDirectory()) pending.push(entryPath);
    }
  }
  return removed;
}

/** Relative paths of the entries below `workspace` (links not followed), at most `limit`. */
async function entriesBelow(workspace: string, limit: number): Promise<string[]> {
  const found: string[] = [];
  const pending = [''];
  while (pending.length > 0 && found.length < limit) {
    const relative = pending.pop() ?? '';
    let entries;
    try {
      entries = await readdir(path.join(workspace, relative), { withFileTypes: true });
    } catch (error) {
      if (isErrorCode(error, 'ENOENT') || isErrorCode(error, 'ENOTDIR') || isErrorCode(error, 'EACCES')) continue;
      throw error;
    }
    for (const entry of entries) {
      const entryPath = path.join(relative, entry.name);
      found.push(entryPath);
      if (entry.isDirectory()) pending.push(entryPath);
    }
  }
  return found;
}
