// Disk quotas of session workspaces. The agent writes what untrusted thread text asks for, and
// DATA_DIR may also hold the embedded database, so each workspace has a size, an entry count and
// a per-file limit. File tools check before they write; the shell reports after each command.
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../core/errors.js';
import { formatSize } from '../core/format-size.js';
import { isErrorCode } from './error-code.js';

/** Limits of one session workspace. */
export interface WorkspaceLimits {
  /** Most bytes of all files together (WORKSPACE_MAX_MB, default 100 MiB). */
  maxBytes: number;
  /** Most files, directories and links together (WORKSPACE_MAX_FILES, default 2,000). */
  maxFiles: number;
  /** Most bytes of one file written by a file tool (WORKSPACE_MAX_FILE_MB, default 16 MiB). */
  maxFileBytes: number;
}

const MiB = 1024 * 1024;

/** Defaults of WorkspaceLimits. */
export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = { maxBytes: 100 * MiB, maxFiles: 2_000, maxFileBytes: 16 * MiB };

/** What a workspace holds. */
export interface WorkspaceUsage {
  bytes: number;
  /** Files, directories and links below the workspace. */
  files: number;
  /** False when counting stopped early (more entries than asked for). */
  complete: boolean;
}

/** Counts the entries and bytes below `directory` (links not followed), stopping after `stopAfterFiles` entries. */
export async function workspaceUsage(directory: string, stopAfterFiles: number): Promise<WorkspaceUsage> {
  const usage: WorkspaceUsage = { bytes: 0, files: 0, complete: true };
  const pending = [directory];
  while (pending.length > 0) {
    const current = pending.pop() ?? directory;
    let entries;
    try {
      entries = await readdir(current, { withFileTypes: true });
    } catch (error) {
      // Removed meanwhile (a shell command may still be cleaning up) or unreadable: not counted.
      if (isErrorCode(error, 'ENOENT') || isErrorCode(error, 'ENOTDIR') || isErrorCode(error, 'EACCES')) continue;
      throw error;
    }
    for (const entry of entries) {
      usage.files += 1;
      if (usage.files > stopAfterFiles) {
        usage.complete = false;
        return usage;
      }
      const entryPath = path.join(current, entry.name);
      if (entry.isDirectory()) pending.push(entryPath);
      else if (entry.isFile()) usage.bytes += (await lstat(entryPath).catch(() => undefined))?.size ?? 0;
    }
  }
  return usage;
}

/** Settings of one checkWrite call. */
export interface PlannedWrite {
  /** Workspace-relative path as the model named it (for messages). */
  shownPath: string;
  /** Size of the file after the write, in bytes. */
  newBytes: number;
  /** Size of the file before the write (0 when it does not exist). */
  oldBytes: number;
  /** Entries the write creates: the file (when new) and missing parent directories. */
  newEntries: number;
}

/** Throws a one-line ToolError when a write would break one of `limits`. */
export async function checkWrite(workspace: string, limits: WorkspaceLimits, write: PlannedWrite): Promise<void> {
  if (write.newBytes > limits.maxFileBytes) {
    throw new ToolError(
      `workspace quota: ${write.shownPath} would be ${formatSize(write.newBytes)}, over the ${formatSize(limits.maxFileBytes)} limit per file (WORKSPACE_MAX_FILE_MB); write smaller files`,
    );
  }
  const usage = await workspaceUsage(workspace, limits.maxFiles + 1);
  const bytesAfter = usage.bytes - write.oldBytes + write.newBytes;
  if (write.newBytes > write.oldBytes && bytesAfter > limits.maxBytes) {
    throw new ToolError(
      `workspace quota: writing ${write.shownPath} would bring the workspace to ${formatSize(bytesAfter)}, over its ${formatSize(limits.maxBytes)} limit (WORKSPACE_MAX_MB; ${formatSize(usage.bytes)} used now); delete files you no longer need first`,
    );
  }
  if (write.newEntries > 0 && usage.files + write.newEntries > limits.maxFiles) {
    throw new ToolError(
      `workspace quota: the workspace holds ${usage.complete ? usage.files : `more than ${limits.maxFiles}`} files and directories, its limit is ${limits.maxFiles} (WORKSPACE_MAX_FILES); delete some first`,
    );
  }
}

/** A note for the model when the workspace is over a limit (e.g. after a shell command), else undefined. */
export async function overQuotaNote(workspace: string, limits: WorkspaceLimits): Promise<string | undefined> {
  const usage = await workspaceUsage(workspace, limits.maxFiles + 1);
  const over: string[] = [];
  if (usage.bytes > limits.maxBytes) over.push(`${formatSize(usage.bytes)} of its ${formatSize(limits.maxBytes)} limit (WORKSPACE_MAX_MB)`);
  if (usage.files > limits.maxFiles) over.push(`${usage.complete ? usage.files : `more than ${limits.maxFiles}`} files and directories of its ${limits.maxFiles} limit (WORKSPACE_MAX_FILES)`);
  if (over.length === 0) return undefined;
  return `workspace over quota: it holds ${over.join(' and ')}; file tools refuse to write until you delete files`;
}

/** How many directories between `workspace` and `target` (exclusive) do not exist yet. */
export async function missingParents(workspace: string, target: string): Promise<number> {
  let missing = 0;
  for (let parent = path.dirname(target); parent.startsWith(workspace) && parent !== workspace; parent = path.dirname(parent)) {
    const exists = await lstat(parent).then(() => true, () => false);
    if (exists) break;
    missing += 1;
  }
  return missing;
}
