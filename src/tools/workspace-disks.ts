// Each session workspace a filesystem of its own (docs/security.md "Workspace disks"). A shell
// command writes as fast as the disk takes it, so a quota measured from outside (shell-quota.ts,
// every 250 ms) is always behind it. Where Hippo runs as root with loop devices, a workspace is a
// sparse ext4 image of WORKSPACE_MAX_MB in DATA_DIR/workspace-disks, loop-mounted at the
// workspace's path: a write past the quota fails in the kernel with ENOSPC, and the host's own
// writes (file tools, shared files) go through the same mount. Everything that mounts, formats or
// removes runs in child processes (never on the event loop) under one lock file per disks
// directory (flock), so replicas on one machine sharing DATA_DIR never mount one image twice.
// Mounts outlive the process: a restart, or another replica, finds them and uses them.
import { spawn } from 'node:child_process';
import { lstat, mkdir, rm, stat, statfs, utimes } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../log.js';
import type { WorkspaceLimits } from './workspace-quota.js';

/** WORKSPACE_QUOTA: how the byte quota holds against shell commands. */
export type WorkspaceQuotaMode = 'auto' | 'filesystem' | 'sampler';

/** Where the tools the disk script runs are looked up. */
export const DISK_TOOLS_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Longest a disk operation (format, check, resize, copy, mount) may take before it is killed. */
const OPERATION_TIMEOUT_MS = 120_000;

/** After a workspace could not get its disk, how long before it is tried again (loop devices may free up). */
const RETRY_AFTER_MS = 60_000;

const MiB = 1024 * 1024;

/**
 * The disk operations, one `sh` script run under `flock` on DISKS/.lock. Arguments: operation
 * (ensure | remove), workspace directory, image, bytes, inodes, create (1: make an image when none
 * exists). `ensure` prints the image's size in bytes as its last line (or "kept SIZE" first when a
 * smaller quota could not be applied); exit 3: no image and create is 0 (a plain directory).
 */
const DISK_SCRIPT = `set -u
op=$1 dir=$2 img=$3 bytes=$4 inodes=$5 create=$6
fail() { printf '%s\\n' "$1" >&2; exit 1; }
command -v mountpoint >/dev/null || fail "mountpoint: not found (util-linux)"
mounted() { mountpoint -q "$dir"; }
if [ "$op" = remove ]; then
  if mounted; then umount "$dir" 2>/dev/null || umount -l "$dir" || fail "umount: the workspace's filesystem cannot be unmounted"; fi
  rm -f "$img" "$img.new"; rmdir "$img.mnt" 2>/dev/null
  rm -rf "$dir"
  exit 0
fi
# The quota changed since the image was made: it is resized unmounted (growing online needs
# CAP_SYS_RESOURCE, shrinking online is not possible); a workspace in use keeps its size for now.
if mounted && [ -f "$img" ] && [ "$(stat -c %s "$img")" -ne "$bytes" ]; then umount "$dir" 2>/dev/null; fi
if ! mounted; then
  mkdir -p "$dir" || fail "mkdir: cannot create the workspace directory"
  fresh=0
  if [ ! -e "$img" ]; then
    [ "$create" = 1 ] || exit 3
    rm -f "$img.new"
    truncate -s "$bytes" "$img.new" || fail "truncate: cannot create the image"
    out=$(mkfs.ext4 -q -F -m 0 -N "$inodes" -O ^has_journal -E nodiscard -L hippo-workspace "$img.new" 2>&1) || fail "mkfs.ext4: $out"
    mv "$img.new" "$img" || fail "mv: cannot name the image"
    fresh=1
  elif [ -n "$(losetup -n -j "$img" 2>/dev/null)" ]; then
    # Unmounted here but alive elsewhere: a sandbox's mount namespace (copied while this disk was
    # mounted) still holds it. Checking or resizing it now would write under a live filesystem;
    # mounting it again shares that one. Its size changes at a later start.
    :
  else
    # After a crash or power loss (no journal: the disk is scratch space, its size the point).
    e2fsck -p "$img" >/dev/null 2>&1 || [ $? -lt 4 ] || e2fsck -y "$img" >/dev/null 2>&1
    have=$(stat -c %s "$img")
    if [ "$have" -ne "$bytes" ]; then
      e2fsck -f -y "$img" >/dev/null 2>&1
      if [ "$bytes" -gt "$have" ]; then
        truncate -s "$bytes" "$img" && out=$(resize2fs "$img" 2>&1) || fail "resize2fs: $out"
      elif resize2fs "$img" "$((bytes / 1024))K" >/dev/null 2>&1; then
        truncate -s "$bytes" "$img" || fail "truncate: cannot shrink the image"
      else
        echo "kept $have"
      fi
    fi
  fi
  # Files from before the disk (a workspace of the sampler's time) move into it, or all stay put.
  if [ -n "$(find "$dir" -mindepth 1 -print -quit)" ]; then
    staging="$img.mnt"; mkdir -p "$staging"
    out=$(mount -o loop,nosuid,nodev "$img" "$staging" 2>&1) || fail "mount: $out"
    if cp -a "$dir/." "$staging/" 2>/dev/null; then umount "$staging"; find "$dir" -mindepth 1 -delete
    else umount "$staging"; [ "$fresh" = 1 ] && rm -f "$img"; rmdir "$staging"; fail "cp: the workspace's files do not fit in its quota"; fi
    rmdir "$staging"
  fi
  out=$(mount -o loop,nosuid,nodev,noatime "$img" "$dir" 2>&1) || fail "mount: $out"
  # mkfs and e2fsck make it; the workspace starts empty (one holding recovered files stays).
  rmdir "$dir/lost+found" 2>/dev/null
fi
if [ -f "$img" ]; then stat -c %s "$img"; else echo 0; fi`;

/** What holds a workspace. */
type DiskState =
  /** A filesystem of `bytes` mounted at the workspace (device `dev`). */
  | { kind: 'filesystem'; bytes: number; dev: number }
  /** A plain directory; `retryAt`: when to try for a disk again (0: never in this process). */
  | { kind: 'directory'; retryAt: number };

/** Settings of WorkspaceDisks. */
export interface WorkspaceDisksOptions {
  /** Directory holding one workspace per session (DATA_DIR/workspaces). */
  root: string;
  /** Directory of the images (DATA_DIR/workspace-disks). */
  images: string;
  limits: WorkspaceLimits;
  /** New workspaces get a disk (startWorkspaceDisks decides); an existing image is mounted either way. */
  enabled: boolean;
  log: Pick<Logger, 'warn' | 'info'>;
  /** PATH the disk tools are looked up in (default DISK_TOOLS_PATH). */
  searchPath?: string;
}

/** The images directory beside the workspaces root: DATA_DIR/workspace-disks. */
export function workspaceImagesDirectory(dataDir: string): string {
  return path.resolve(dataDir, 'workspace-disks');
}

/** How many inodes a disk gets: the entry quota and a few, its table at most 1/8 of the disk. */
export function diskInodes(limits: WorkspaceLimits): number {
  return Math.max(64, Math.min(limits.maxFiles + 16, Math.floor(limits.maxBytes / 2048)));
}

/** Mounts, grows, shrinks and removes the workspaces' disks. */
export class WorkspaceDisks {
  private readonly states = new Map<string, DiskState>();
  private readonly pending = new Map<string, Promise<DiskState>>();

  constructor(readonly options: WorkspaceDisksOptions) {}

  /** The image of a workspace directory. */
  imageOf(directory: string): string {
    return path.join(this.options.images, `${path.basename(directory)}.img`);
  }

  /**
   * Makes `directory` ready: its disk mounted (made on first use, when enabled), else a plain
   * directory; failures leave a plain directory and a log line, never an error.
   */
  async ensure(directory: string): Promise<void> {
    const resolved = path.resolve(directory);
    const known = this.states.get(resolved);
    if (known?.kind === 'filesystem' && (await this.stillMounted(resolved, known.dev))) return this.touch(resolved);
    if (known?.kind === 'directory' && (known.retryAt === 0 || Date.now() < known.retryAt)) {
      await mkdir(resolved, { recursive: true });
      return;
    }
    let running = this.pending.get(resolved);
    if (!running) {
      running = this.prepare(resolved).finally(() => this.pending.delete(resolved));
      this.pending.set(resolved, running);
    }
    const state = await running;
    this.states.set(resolved, state);
    if (state.kind === 'filesystem') await this.touch(resolved);
  }

  /** True when `directory` is a mounted disk no larger than the quota: the kernel holds its size. */
  isBounded(directory: string): boolean {
    const state = this.states.get(path.resolve(directory));
    return state?.kind === 'filesystem' && state.bytes <= this.options.limits.maxBytes;
  }

  /** A note for the model when a bounded workspace is full (bytes or entries), else undefined. */
  async fullNote(directory: string): Promise<string | undefined> {
    if (!this.isBounded(directory)) return undefined;
    const info = await statfs(directory).catch(() => undefined);
    if (!info) return undefined;
    const { maxBytes } = this.options.limits;
    const free = info.bavail * info.bsize;
    if (free < Math.max(64 * 1024, maxBytes / 100)) return `${workspaceFullMessage(maxBytes)}: writes fail with "No space left on device" until you delete files`;
    if (info.ffree === 0) return `workspace full: no file or directory can be created (the entry quota, WORKSPACE_MAX_FILES, is ${this.options.limits.maxFiles}) until you delete some`;
    return undefined;
  }

  /** When the workspace was last used: its directory's time stamp, or its image's (set on every use). */
  async lastUsedMs(directory: string): Promise<number | undefined> {
    const [own, image] = await Promise.all([lstat(directory).catch(() => undefined), stat(this.imageOf(directory)).catch(() => undefined)]);
    if (!own) return undefined;
    return Math.max(own.mtimeMs, image?.mtimeMs ?? 0);
  }

  /** Removes a workspace: its disk unmounted, its image deleted, its directory removed. */
  async remove(directory: string): Promise<void> {
    const resolved = path.resolve(directory);
    this.states.delete(resolved);
    const image = this.imageOf(resolved);
    const hasImage = await lstat(image).then(() => true, () => false);
    if (!hasImage && !(await isMountPoint(resolved))) {
      // rm does not follow symbolic links inside: it removes the links themselves.
      await rm(resolved, { recursive: true, force: true });
      return;
    }
    const result = await this.run(['remove', resolved, image, '0', '0', '0']);
    if (result.code !== 0) throw new Error(`workspace disk of ${path.basename(resolved)} not removed: ${lastLine(result.stderr) || `exit ${result.code}`}`);
  }

  private async prepare(directory: string): Promise<DiskState> {
    const image = this.imageOf(directory);
    if (!this.options.enabled && !(await lstat(image).then(() => true, () => false))) {
      await mkdir(directory, { recursive: true });
      return { kind: 'directory', retryAt: 0 };
    }
    await mkdir(this.options.images, { recursive: true, mode: 0o700 });
    const { limits } = this.options;
    const result = await this.run(['ensure', directory, image, String(limits.maxBytes), String(diskInodes(limits)), this.options.enabled ? '1' : '0']);
    const name = path.basename(directory);
    if (result.code === 3) return { kind: 'directory', retryAt: 0 };
    if (result.code !== 0) {
      this.options.log.warn({ workspace: name, reason: lastLine(result.stderr) || `exit ${result.code}` }, 'workspace-disk-failed: the workspace stays a plain directory for now; its quota is sampled while shell commands run');
      await mkdir(directory, { recursive: true });
      return { kind: 'directory', retryAt: Date.now() + RETRY_AFTER_MS };
    }
    const lines = result.stdout.trim().split('\n');
    const kept = lines.find((line) => line.startsWith('kept '));
    const bytes = Number(lines.at(-1));
    if (kept) {
      this.options.log.warn({ workspace: name, diskMiB: Math.round(bytes / MiB), quotaMiB: limits.maxBytes / MiB }, 'workspace-disk-kept: the workspace holds more than the new WORKSPACE_MAX_MB, so its disk keeps its size (its quota is sampled and file tools refuse writes past it) until files are deleted');
    }
    return { kind: 'filesystem', bytes, dev: (await stat(directory)).dev };
  }

  /** The mount is still there: the directory's device differs from its parent's and is the one mounted. */
  private async stillMounted(directory: string, dev: number): Promise<boolean> {
    const [own, parent] = await Promise.all([stat(directory).catch(() => undefined), stat(path.dirname(directory)).catch(() => undefined)]);
    return own !== undefined && parent !== undefined && own.dev === dev && own.dev !== parent.dev;
  }

  /** Marks the image as used now (the retention sweep reads it while the disk is not mounted). */
  private async touch(directory: string): Promise<void> {
    const now = new Date();
    await utimes(this.imageOf(directory), now, now).catch(() => undefined);
  }

  private run(args: string[]): Promise<ProcessResult> {
    const lock = path.join(this.options.images, '.lock');
    return runProcess('flock', ['-w', String(OPERATION_TIMEOUT_MS / 1000), lock, 'sh', '-c', DISK_SCRIPT, 'hippo-workspace-disk', ...args], this.options.searchPath ?? DISK_TOOLS_PATH);
  }
}

/** "workspace full: 5 MiB quota (WORKSPACE_MAX_MB)". */
export function workspaceFullMessage(maxBytes: number): string {
  return `workspace full: ${Math.round((maxBytes / MiB) * 10) / 10} MiB quota (WORKSPACE_MAX_MB)`;
}

/** Settings of startWorkspaceDisks. */
export interface StartWorkspaceDisksOptions extends Omit<WorkspaceDisksOptions, 'enabled'> {
  mode: WorkspaceQuotaMode;
  /** The shell tool is on (without it nothing writes past a check, so no disk is needed). */
  shell: boolean;
}

/**
 * Decides at start-up whether new workspaces get a disk: WORKSPACE_QUOTA=sampler or no shell
 * tool, no; otherwise a probe disk is made, mounted, written and removed. When that fails, `auto`
 * goes on with the sampler and one warning line naming why; `filesystem` stops start-up.
 */
export async function startWorkspaceDisks(options: StartWorkspaceDisksOptions): Promise<WorkspaceDisks> {
  const { mode, shell, ...rest } = options;
  if (!shell) return new WorkspaceDisks({ ...rest, enabled: false });
  if (mode === 'sampler') {
    options.log.info('workspace-quota-sampled: WORKSPACE_QUOTA=sampler; a fast shell command can write past WORKSPACE_MAX_MB before it is killed');
    return new WorkspaceDisks({ ...rest, enabled: false });
  }
  const problem = process.getuid?.() === 0 ? await probeDisks(rest) : 'Hippo does not run as root (loop mounts need it)';
  if (problem === undefined) {
    options.log.info({ images: rest.images }, 'workspace-disks-ready: each workspace is a filesystem of WORKSPACE_MAX_MB');
    return new WorkspaceDisks({ ...rest, enabled: true });
  }
  if (mode === 'filesystem') {
    throw new ConfigError(`config: WORKSPACE_QUOTA=filesystem, but no workspace filesystem can be made here (${problem}); run as root with loop devices and e2fsprogs, or set WORKSPACE_QUOTA=auto`);
  }
  options.log.warn({ reason: problem }, `workspace-quota-sampled: ${problem}; workspace sizes are measured every 250 ms while a shell command runs, so a fast command can write past WORKSPACE_MAX_MB before it is killed`);
  return new WorkspaceDisks({ ...rest, enabled: false });
}

/** Makes, mounts, writes and removes a small disk; returns why it failed, or undefined. */
async function probeDisks(options: Omit<WorkspaceDisksOptions, 'enabled'>): Promise<string | undefined> {
  try {
    await mkdir(options.images, { recursive: true, mode: 0o700 });
  } catch (error) {
    return `cannot create ${options.images}: ${error instanceof Error ? error.message : String(error)}`;
  }
  let reason: string | undefined;
  const log = { info: () => undefined, warn: (fields: { reason?: string }) => void (reason = fields.reason) };
  const probe = new WorkspaceDisks({ ...options, root: options.images, limits: { ...options.limits, maxBytes: 2 * MiB, maxFiles: 48 }, enabled: true, log: log as Pick<Logger, 'warn' | 'info'> });
  const directory = path.join(options.images, '.probe');
  try {
    await probe.ensure(directory);
    if (reason !== undefined) return reason;
    if (!probe.isBounded(directory) || !(await isMountPoint(directory))) return 'the probe disk was not mounted';
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await probe.remove(directory).catch(() => undefined);
  }
}

/** True when `directory` is a mount point (its device differs from its parent's). */
export async function isMountPoint(directory: string): Promise<boolean> {
  const [own, parent] = await Promise.all([stat(directory).catch(() => undefined), stat(path.dirname(directory)).catch(() => undefined)]);
  return own !== undefined && parent !== undefined && own.dev !== parent.dev;
}

interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (killed after OPERATION_TIMEOUT_MS); a missing program is exit 127. */
function runProcess(file: string, args: string[], searchPath: string): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { PATH: searchPath, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'], timeout: OPERATION_TIMEOUT_MS, killSignal: 'SIGKILL' });
    let stdout = '';
    let stderr = '';
    // Both bounded: the script prints a line or two; a tool gone wild is cut.
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < 4_096) stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4_096) stderr += chunk.toString('utf8');
    });
    child.once('error', (error) => resolve({ code: 127, stdout, stderr: `${file}: ${error.message}` }));
    child.once('close', (code, signal) => resolve({ code: code ?? 128, stdout, stderr: signal ? `${stderr}\nkilled by ${signal}` : stderr }));
  });
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1)?.trim() ?? '';
}
