// Workspace disks (docs/security.md "Workspace disks"): each workspace an ext4 image of the quota's
// size, loop-mounted at its path, on this machine's real loop devices (root). Every mount made here
// lies under this file's own temporary folder and is unmounted in afterAll, failures included;
// `mount -o loop` takes a free loop device, so test files running at once do not meet.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import type { AnyTool } from '../../src/core/tool.js';
import { shellTools } from '../../src/tools/shell.js';
import { detectShellSandbox, type ShellSandbox } from '../../src/tools/shell-sandbox.js';
import { sweepIdleWorkspaces, workspaceTools } from '../../src/tools/workspace.js';
import { WorkspaceAttachments } from '../../src/tools/workspace-attachments.js';
import { startWorkspaceDisks, WorkspaceDisks, type WorkspaceDisksOptions } from '../../src/tools/workspace-disks.js';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import type { WorkspaceLimits } from '../../src/tools/workspace-quota.js';
import type { Attachment, SessionRecord } from '../../src/core/store.js';
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { toolContext } from '../support/tool-context.js';
import { until } from '../support/wait.js';

const MiB = 1024 * 1024;
const limits: WorkspaceLimits = { maxBytes: 5 * MiB, maxFiles: 2_000, maxFileBytes: 4 * MiB };
const base = await mkdtemp(path.join(tmpdir(), 'hippo-disks-'));
// bwrap started as a session's user must reach the workspaces (mkdtemp makes 0700).
await chmod(base, 0o755);
const root = path.join(base, 'workspaces');
const images = path.join(base, 'workspace-disks');
const home = path.join(base, 'home');
await mkdir(home, { recursive: true });

const canMount = process.getuid?.() === 0 && existsSync('/dev/loop-control');

/** The log lines a WorkspaceDisks wrote. */
function recordingLog(): { lines: string[]; warn: (fields: unknown, message?: string) => void; info: (fields: unknown, message?: string) => void } {
  const lines: string[] = [];
  const add = (fields: unknown, message?: string): void => void lines.push(typeof fields === 'string' ? fields : `${message ?? ''} ${JSON.stringify(fields)}`);
  return { lines, warn: add, info: add };
}

function disksWith(overrides: Partial<WorkspaceDisksOptions> = {}): WorkspaceDisks {
  return new WorkspaceDisks({ root, images, limits, enabled: true, log: recordingLog(), ...overrides });
}

/** Mount points under this file's folder, from the kernel's table. */
function mountsUnder(folder: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1] ?? '').map((target) => target.replace(/\\040/g, ' ')).filter((target) => target.startsWith(folder));
}

/** Loop devices whose backing file lies under `folder`. */
function loopDevicesUnder(folder: string): string[] {
  const listing = execFileSync('losetup', ['-n', '-O', 'NAME,BACK-FILE', '-l'], { encoding: 'utf8' });
  return listing.split('\n').filter((line) => line.includes(folder)).map((line) => line.trim().split(/\s+/)[0] ?? '');
}

/** Bytes the files below `directory` take on their disk (du: allocated blocks, not apparent sizes). */
async function allocated(directory: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(directory, { withFileTypes: true, recursive: true })) {
    total += ((await lstat(path.join(entry.parentPath, entry.name)).catch(() => undefined))?.blocks ?? 0) * 512;
  }
  return total;
}

afterAll(async () => {
  // Deepest first; lazily, so a leftover process cannot keep a mount (and its loop device) alive.
  for (const target of mountsUnder(base).sort((left, right) => right.length - left.length)) {
    try {
      execFileSync('umount', ['-l', target]);
    } catch {
      // Gone already.
    }
  }
  for (const device of loopDevicesUnder(base)) {
    try {
      execFileSync('losetup', ['-d', device]);
    } catch {
      // Detached already.
    }
  }
  await rm(base, { recursive: true, force: true });
});

const sandboxes: ShellSandbox[] = [];
if (canMount) {
  for (const kind of ['bwrap', 'unshare'] as const) {
    const sandbox = await detectShellSandbox({ root, allowUnsandboxed: false, only: kind }).catch(() => undefined);
    if (sandbox) sandboxes.push(sandbox);
  }
}

describe.runIf(canMount)('workspace disks (root, loop devices)', () => {
  describe.each(sandboxes.map((sandbox) => [sandbox.kind, sandbox] as const))('a shell command (%s)', (kind, sandbox) => {
    const run = (disks: WorkspaceDisks | undefined, sessionId: string, command: string): Promise<string> => {
      const [tool] = shellTools({ root, env: { PATH: process.env['PATH'], HOME: home }, sandbox, limits, ...(disks ? { disks } : {}) }) as [AnyTool];
      return tool.execute(tool.input.parse({ command }), toolContext({ sessionId }));
    };

    it('cannot write past the quota: 50 MiB into a 5 MiB workspace leaves at most 5 MiB on disk, says why, and the session goes on', async () => {
      const disks = disksWith();
      const sessionId = `flood-${kind}`;
      const workspace = sessionWorkspacePath(root, sessionId);
      const result = await run(disks, sessionId, 'head -c 52428800 /dev/zero > flood.bin; echo "head: $?"; dd if=/dev/zero of=more.bin bs=1M count=50 2>&1 | tail -1');
      expect(result).toContain('No space left on device');
      expect(result).toContain('head: 1');
      expect(result).toMatch(/\nworkspace full: 5 MiB quota \(WORKSPACE_MAX_MB\): writes fail with "No space left on device" until you delete files$/);
      expect(result).not.toMatch(/killed/);
      // Measured on the disk, not by apparent sizes: the files' blocks and the image's.
      expect(await allocated(workspace)).toBeLessThanOrEqual(limits.maxBytes);
      expect((await stat(disks.imageOf(workspace))).blocks * 512).toBeLessThanOrEqual(limits.maxBytes);
      expect(mountsUnder(workspace)).toEqual([workspace]);
      const after = await run(disks, sessionId, 'rm flood.bin more.bin; echo still here > next.txt; cat next.txt');
      expect(after).toBe('exit code: 0\nstdout:\nstill here\n');
    });

    it('holds against writers in parallel', async () => {
      const disks = disksWith();
      const sessionId = `parallel-${kind}`;
      const result = await run(disks, sessionId, 'for n in 1 2 3 4; do head -c 20000000 /dev/zero > part-$n.bin & done; wait; echo done');
      expect(result).toMatch(/^exit code: 0\nstdout:\ndone\n/);
      expect(result).toContain('No space left on device');
      expect(await allocated(sessionWorkspacePath(root, sessionId))).toBeLessThanOrEqual(limits.maxBytes);
    });
  });

  it('takes the file tools\' and shared files\' writes into the same disk, and a write that does not fit is a clear error with nothing half-written', async () => {
    const disks = disksWith();
    const sessionId = 'host-writes';
    const workspace = sessionWorkspacePath(root, sessionId);
    const tools = workspaceTools({ root, limits, disks });
    const tool = (name: string): AnyTool => tools.find((candidate) => candidate.name === name) as AnyTool;
    const writeTool = tool('write_file');
    expect(await writeTool.execute(writeTool.input.parse({ path: 'notes.md', content: 'hello' }), toolContext({ sessionId }))).toBe('Created notes.md (5 bytes, 1 lines)');
    expect((await stat(path.join(workspace, 'notes.md'))).dev).toBe((await stat(workspace)).dev);
    expect((await stat(workspace)).dev).not.toBe((await stat(root)).dev);
    // Directories take blocks but no apparent bytes: the file passes the quota check, not the disk.
    await mkdir(path.join(workspace, 'dirs'));
    for (let n = 0; n < 1_500; n += 1) await mkdir(path.join(workspace, 'dirs', String(n)));
    await expect(writeTool.execute(writeTool.input.parse({ path: 'big.txt', content: 'x'.repeat(3_900_000) }), toolContext({ sessionId }))).rejects.toThrow(
      /^workspace full: 5 MiB quota \(WORKSPACE_MAX_MB\): big\.txt could not be written whole; delete files you no longer need first$/,
    );
    expect(existsSync(path.join(workspace, 'big.txt'))).toBe(false);

    const attachments = new WorkspaceAttachments({ root, limits, maxFileBytes: 4 * MiB, images: false, imageLimits: imageLimitsFor('openai', 8), log: recordingLog(), disks });
    const bytes = Buffer.alloc(3_900_000, 7);
    attachments.register('slack', async () => ({ bytes }));
    const session: SessionRecord = {
      id: sessionId, platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: '1.1', memorySpaceId: 'm', title: 't',
      startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
    };
    const attachment: Attachment = { ref: 'F1', name: 'shared.bin', mimeType: 'application/octet-stream', size: bytes.length };
    const [saved] = await attachments.save(session, [attachment], new AbortController().signal);
    expect(saved).toMatchObject({ savedAs: null, note: 'workspace full: 5 MiB quota (WORKSPACE_MAX_MB): delete files in the workspace first' });
    expect(existsSync(path.join(workspace, 'files', 'shared.bin'))).toBe(false);
    await rm(path.join(workspace, 'dirs'), { recursive: true });
    const [again] = await attachments.save(session, [attachment], new AbortController().signal);
    expect(again?.savedAs).toBe('files/shared.bin');
    expect((await stat(path.join(workspace, 'files', 'shared.bin'))).dev).toBe((await stat(workspace)).dev);
  });

  it('keeps the files over a restart: a mount left behind is used again, an unmounted image is mounted', async () => {
    const sessionId = 'restart';
    const workspace = sessionWorkspacePath(root, sessionId);
    await disksWith().ensure(workspace);
    await writeFile(path.join(workspace, 'kept.txt'), 'kept');
    // A restart after SIGKILL: the mount is still there; a new process takes it as it is.
    const restarted = disksWith();
    await restarted.ensure(workspace);
    expect(mountsUnder(workspace)).toEqual([workspace]);
    expect(restarted.isBounded(workspace)).toBe(true);
    expect(await readFile(path.join(workspace, 'kept.txt'), 'utf8')).toBe('kept');
    // Unmounted under a running process (by hand): its next use mounts the disk again.
    execFileSync('umount', [workspace]);
    expect(existsSync(path.join(workspace, 'kept.txt'))).toBe(false);
    await restarted.ensure(workspace);
    expect(await readFile(path.join(workspace, 'kept.txt'), 'utf8')).toBe('kept');
    // A reboot: nothing mounted, the image is.
    execFileSync('umount', [workspace]);
    await disksWith().ensure(workspace);
    expect(await readFile(path.join(workspace, 'kept.txt'), 'utf8')).toBe('kept');
    expect(await readdir(workspace)).toEqual(['kept.txt']);
  });

  it('mounts one image once when replicas on one machine ask at the same moment', async () => {
    const workspace = sessionWorkspacePath(root, 'replicas');
    await Promise.all([disksWith().ensure(workspace), disksWith().ensure(workspace), disksWith().ensure(workspace)]);
    expect(mountsUnder(workspace)).toEqual([workspace]);
    expect(loopDevicesUnder(disksWith().imageOf(workspace))).toHaveLength(1);
  });

  // A sandbox started meanwhile (this file's, or another test file's) holds a copy of the mount
  // table while its command runs, and with it this disk: a resize then waits (never writes under a
  // live filesystem), so each step is tried again with a new process's view until it lands.
  const settled = (limitsNow: WorkspaceLimits, log = recordingLog()) => async (): Promise<WorkspaceDisks> => {
    const disks = disksWith({ limits: limitsNow, log });
    await disks.ensure(sessionWorkspacePath(root, 'resize'));
    return disks;
  };

  it('grows a disk when the quota grows, shrinks it when what it holds fits, and keeps it (sampled) when not', async () => {
    const workspace = sessionWorkspacePath(root, 'resize');
    const image = disksWith().imageOf(workspace);
    await disksWith().ensure(workspace);
    await writeFile(path.join(workspace, 'data.bin'), Buffer.alloc(3 * MiB, 1));
    let grown = await settled({ ...limits, maxBytes: 8 * MiB })();
    await until(async () => (await stat(image)).size === 8 * MiB || ((grown = await settled({ ...limits, maxBytes: 8 * MiB })()), false), 90_000, 'the grown disk');
    expect(grown.isBounded(workspace)).toBe(true);
    expect((await readFile(path.join(workspace, 'data.bin'))).length).toBe(3 * MiB);

    const log = recordingLog();
    let refused = await settled({ ...limits, maxBytes: 2 * MiB }, log)();
    await until(async () => log.lines.length > 0 || ((refused = await settled({ ...limits, maxBytes: 2 * MiB }, log)()), false), 90_000, 'the refused shrink');
    expect((await stat(image)).size).toBe(8 * MiB);
    expect(refused.isBounded(workspace)).toBe(false);
    expect(log.lines).toEqual([expect.stringMatching(/^workspace-disk-kept: the workspace holds more than the new WORKSPACE_MAX_MB, so its disk keeps its size .*"diskMiB":8,"quotaMiB":2/)]);

    await rm(path.join(workspace, 'data.bin'));
    let shrunk = await settled({ ...limits, maxBytes: 2 * MiB })();
    await until(async () => (await stat(image)).size === 2 * MiB || ((shrunk = await settled({ ...limits, maxBytes: 2 * MiB })()), false), 90_000, 'the shrunk disk');
    expect(shrunk.isBounded(workspace)).toBe(true);
    expect(mountsUnder(workspace)).toEqual([workspace]);
  }, 300_000);

  it('neither checks nor resizes a disk that another mount namespace still holds, and mounts it again as it is', async () => {
    const workspace = sessionWorkspacePath(root, 'held');
    const image = disksWith().imageOf(workspace);
    await disksWith().ensure(workspace);
    await writeFile(path.join(workspace, 'note.txt'), 'held');
    // As a sandbox does: a new mount namespace copies the mount table, this disk included.
    const holder = spawn('unshare', ['--mount', '--propagation', 'private', 'sleep', '30'], { stdio: 'ignore' });
    try {
      await until(() => existsSync(`/proc/${holder.pid}/ns/mnt`) && readFileSync(`/proc/${holder.pid}/mountinfo`, 'utf8').includes(workspace), 10_000, 'the namespace holding the disk');
      const grown = disksWith({ limits: { ...limits, maxBytes: 8 * MiB } });
      await grown.ensure(workspace);
      expect((await stat(image)).size).toBe(5 * MiB);
      expect(grown.isBounded(workspace)).toBe(true);
      expect(mountsUnder(workspace)).toEqual([workspace]);
      expect(await readFile(path.join(workspace, 'note.txt'), 'utf8')).toBe('held');
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('moves the files of a workspace made before its disk into the disk', async () => {
    const workspace = sessionWorkspacePath(root, 'before');
    await mkdir(path.join(workspace, 'sub'), { recursive: true });
    await writeFile(path.join(workspace, 'sub', 'old.txt'), 'from the sampler\'s time');
    const disks = disksWith();
    await disks.ensure(workspace);
    expect(disks.isBounded(workspace)).toBe(true);
    expect(mountsUnder(workspace)).toEqual([workspace]);
    expect(await readFile(path.join(workspace, 'sub', 'old.txt'), 'utf8')).toBe('from the sampler\'s time');
  });

  it('removes a workspace with its mount, loop device and image (purge), and sweeps an idle one', { timeout: 120_000 }, async () => {
    const disks = disksWith();
    const workspace = sessionWorkspacePath(root, 'purged');
    await disks.ensure(workspace);
    await writeFile(path.join(workspace, 'secret.txt'), 'gone');
    const image = disks.imageOf(workspace);
    await disks.remove(workspace);
    expect(mountsUnder(workspace)).toEqual([]);
    // Detached once no sandbox's copy of the mount table holds it any more (see "settled" above).
    await until(() => loopDevicesUnder(image).length === 0, 90_000, 'the loop device detached');
    expect(existsSync(image)).toBe(false);
    expect(existsSync(workspace)).toBe(false);

    const idle = sessionWorkspacePath(root, 'idle');
    await disks.ensure(idle);
    const longAgo = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    await utimes(idle, longAgo, longAgo);
    await utimes(disks.imageOf(idle), longAgo, longAgo);
    const used = sessionWorkspacePath(root, 'used');
    await disks.ensure(used);
    // The sweep reads an unmounted workspace's image: its own directory keeps the time it was made.
    execFileSync('umount', [used]);
    await utimes(used, longAgo, longAgo);
    await sweepIdleWorkspaces(root, 30 * 24 * 3600 * 1000, Date.now(), disks);
    expect(existsSync(idle)).toBe(false);
    expect(existsSync(disks.imageOf(idle))).toBe(false);
    expect(mountsUnder(idle)).toEqual([]);
    expect(existsSync(used)).toBe(true);
  });

  it('starts with disks when it can; warns once and samples when it cannot; stops start-up when WORKSPACE_QUOTA=filesystem cannot be had', async () => {
    const log = recordingLog();
    const ready = await startWorkspaceDisks({ root, images, limits, log, mode: 'auto', shell: true });
    expect(ready.options.enabled).toBe(true);
    expect(log.lines).toEqual([expect.stringMatching(/^workspace-disks-ready: /)]);
    expect(mountsUnder(images)).toEqual([]);

    const broken = recordingLog();
    const sampled = await startWorkspaceDisks({ root, images, limits, log: broken, mode: 'auto', shell: true, searchPath: '/nonexistent' });
    expect(sampled.options.enabled).toBe(false);
    expect(broken.lines).toEqual([expect.stringMatching(/^workspace-quota-sampled: flock: spawn flock ENOENT; workspace sizes are measured every 250 ms while a shell command runs/)]);
    await expect(startWorkspaceDisks({ root, images, limits, log: recordingLog(), mode: 'filesystem', shell: true, searchPath: '/nonexistent' })).rejects.toBeInstanceOf(ConfigError);
    const chosen = recordingLog();
    expect((await startWorkspaceDisks({ root, images, limits, log: chosen, mode: 'sampler', shell: true })).options.enabled).toBe(false);
    expect(chosen.lines).toEqual([expect.stringMatching(/^workspace-quota-sampled: WORKSPACE_QUOTA=sampler/)]);
    expect((await startWorkspaceDisks({ root, images, limits, log: recordingLog(), mode: 'auto', shell: false })).options.enabled).toBe(false);
  });

  it.runIf(sandboxes.length > 0)('falls back to the sampler when disks are off: a plain directory, the command killed and its files removed', async () => {
    const disks = disksWith({ enabled: false });
    const sessionId = 'sampled';
    const workspace = sessionWorkspacePath(root, sessionId);
    const [tool] = shellTools({ root, env: { PATH: process.env['PATH'], HOME: home }, sandbox: sandboxes[0]!, limits, disks, quotaCheckMs: 50 }) as [AnyTool];
    const result = await tool.execute(tool.input.parse({ command: 'for n in $(seq 40); do head -c 1000000 /dev/zero > part-$n.bin; sleep 0.05; done; echo finished' }), toolContext({ sessionId }));
    expect(mountsUnder(workspace)).toEqual([]);
    expect(disks.isBounded(workspace)).toBe(false);
    expect(result).toMatch(/^killed: the workspace grew past its quota/);
    expect(await readdir(workspace)).toEqual([]);
  });
});
