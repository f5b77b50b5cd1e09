// Where a session's files live and how a path from the model is confined to them. Shared by the
// workspace tools and the shell tool, so both see the same directory.
import { constants } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, utimes, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../core/errors.js';
import type { WorkspaceDisks } from './workspace-disks.js';
import { isErrorCode } from './error-code.js';

/** Directory name of a session inside the workspaces root (session ids are kept readable). */
export function sessionDirectoryName(sessionId: string): string {
  // Characters outside this set are percent-encoded so an id can never contain a separator.
  const name = sessionId.replace(/[^A-Za-z0-9._:@-]/g, (character) =>
    [...Buffer.from(character, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
  if (name === '' || name === '.' || name === '..') throw new ToolError(`session id ${JSON.stringify(sessionId)} cannot name a workspace`);
  return name;
}

/** Path of a session's workspace: `<root>/<sessionId>` (not created). */
export function sessionWorkspacePath(root: string, sessionId: string): string {
  return path.join(path.resolve(root), sessionDirectoryName(sessionId));
}

/**
 * Creates the session's workspace if needed (with `disks`, its own filesystem, mounted) and marks
 * it as used now (its time stamp is what the retention sweep looks at); returns its real path
 * (symlinks resolved).
 */
export async function ensureSessionWorkspace(root: string, sessionId: string, disks?: WorkspaceDisks): Promise<string> {
  const directory = sessionWorkspacePath(root, sessionId);
  if (disks) await disks.ensure(directory);
  else await mkdir(directory, { recursive: true });
  const now = new Date();
  await utimes(directory, now, now);
  return realpath(directory);
}

/**
 * Resolves a model-supplied relative path inside `workspace` (a real path). Refuses absolute
 * paths, `..` escapes and symlinks that lead outside; returns the absolute (unresolved) path.
 */
export async function resolveInWorkspace(workspace: string, relativePath: string): Promise<string> {
  if (relativePath.includes('\0')) throw new ToolError('path contains a NUL character');
  if (path.isAbsolute(relativePath) || /^[A-Za-z]:[\\/]/.test(relativePath) || relativePath.startsWith('~')) {
    throw new ToolError(`path "${relativePath}" is absolute; use a path relative to the session workspace`);
  }
  const target = path.resolve(workspace, relativePath);
  if (!isInside(workspace, target)) {
    throw new ToolError(`path "${relativePath}" leaves the session workspace; use a path inside it`);
  }
  // The lexical check is not enough: a symlink on the way may point elsewhere. The deepest part
  // of the path that exists decides where the rest would land.
  const real = await realDeepestExisting(target, relativePath);
  if (!isInside(workspace, real)) {
    throw new ToolError(`path "${relativePath}" goes through a symbolic link that leads outside the session workspace`);
  }
  return target;
}

/** True when `candidate` is `directory` itself or below it. */
export function isInside(directory: string, candidate: string): boolean {
  const relative = path.relative(directory, candidate);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

async function realDeepestExisting(target: string, shownPath: string): Promise<string> {
  let current = target;
  const missing: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(current), ...missing);
    } catch (error) {
      if (!isErrorCode(error, 'ENOENT') && !isErrorCode(error, 'ENOTDIR')) throw error;
    }
    // realpath also fails on a dangling symlink; writing through it would create its target,
    // which may be anywhere, so such links are refused rather than followed.
    if (await isSymbolicLink(current)) {
      throw new ToolError(`path "${shownPath}" goes through a symbolic link whose target does not exist`);
    }
    const parent = path.dirname(current);
    if (parent === current) return current;
    missing.unshift(path.basename(current));
    current = parent;
  }
}

async function isSymbolicLink(candidate: string): Promise<boolean> {
  try {
    return (await lstat(candidate)).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Opens a workspace file for reading so that what is read is what was checked: the last component
 * is never followed (O_NOFOLLOW), the descriptor's own path (/proc/self/fd/N) must lie inside the
 * workspace, and it must be a regular file. A shell command that swaps the path for a symlink
 * between a check and a read (to /proc/self/environ, say) gets a refusal, never those bytes.
 * The caller closes the handle.
 */
export async function openInWorkspace(workspace: string, relativePath: string): Promise<{ handle: FileHandle; size: number }> {
  const target = await resolveInWorkspace(workspace, relativePath);
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO put in the file's place must not hang the reader.
    handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (isErrorCode(error, 'ELOOP')) throw new ToolError(`path "${relativePath}" is a symbolic link, not a file in the workspace`);
    throw new ToolError(`${relativePath} is not a file in the workspace`);
  }
  try {
    const real = await readlink(`/proc/self/fd/${handle.fd}`);
    if (!isInside(workspace, real)) throw new ToolError(`path "${relativePath}" goes through a symbolic link that leads outside the session workspace`);
    const info = await handle.stat();
    if (!info.isFile()) throw new ToolError(`${relativePath} is not a file in the workspace`);
    return { handle, size: info.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Reads at most `maxBytes` from an open file; a file that grew past it since its check is refused. */
export async function readAtMost(handle: FileHandle, maxBytes: number, shownPath: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.alloc(Math.min(1024 * 1024, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes) throw new ToolError(`${shownPath} grew past the limit for files sent to the thread (FILE_MAX_MB)`);
  }
}
