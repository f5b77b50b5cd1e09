// The shell tool in every isolation this machine offers (bwrap, unshare, and none, which only
// SHELL_UNSANDBOXED allows). Isolation itself is tested in tools-shell-sandbox.test.ts.
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError } from '../../src/core/errors.js';
import type { AnyTool, ToolContext } from '../../src/core/tool.js';
import { shellEnvironment, shellTools, type ShellToolsOptions } from '../../src/tools/shell.js';
import { detectShellSandbox, type SandboxKind, type ShellSandbox } from '../../src/tools/shell-sandbox.js';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import { workspaceUsage } from '../../src/tools/workspace-quota.js';
import { toolContext } from '../support/tool-context.js';
import { until } from '../support/wait.js';

const context = toolContext;

const base = await mkdtemp(path.join(tmpdir(), 'hippo-shell-'));
// bwrap started as the shell user must be able to reach the workspaces (mkdtemp makes 0700).
await chmod(base, 0o755);
const root = path.join(base, 'workspaces');
// A fresh HOME keeps the login shell from running the machine's ~/.profile: fast, and a timeout
// kill cannot interrupt someone's profile script half-way (and leave its lock files behind).
const home = path.join(base, 'home');
const baseEnv: Record<string, string | undefined> = { PATH: process.env['PATH'], HOME: home };
/** The sandboxes that work on this machine (bwrap needs bubblewrap; unshare needs root). */
const sandboxes = new Map<SandboxKind, ShellSandbox>();
for (const kind of ['bwrap', 'unshare', 'none'] as const) {
  const sandbox = await detectShellSandbox({ root, allowUnsandboxed: true, only: kind }).catch(() => undefined);
  if (sandbox?.kind === kind) sandboxes.set(kind, sandbox);
}

beforeAll(async () => {
  await mkdir(home, { recursive: true });
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** True while the process exists and is not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // Field 3 of /proc/<pid>/stat is the state; Z is a zombie (dead, not yet reaped).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function waitUntilGone(pid: number, timeoutMs = 2_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return !isRunning(pid);
}

describe('the machine', () => {
  it('offers a sandbox for the shell (bubblewrap or unshare)', () => {
    expect(sandboxes.has('bwrap') || sandboxes.has('unshare')).toBe(true);
  });
});

// A kind missing here is skipped: bwrap when bubblewrap is not installed, unshare when not root.
describe.each(['bwrap', 'unshare', 'none'] as const)('shell tool (%s)', (kind) => {
  if (!sandboxes.has(kind)) {
    it.skip(`needs the ${kind} sandbox, which this machine does not offer`, () => undefined);
    return;
  }

  async function shell(args: { command: string; timeout_seconds?: number }, options: Partial<ShellToolsOptions> = {}, overrides: Partial<ToolContext> = {}): Promise<string> {
    const sandbox = sandboxes.get(kind);
    if (!sandbox) throw new Error(`no ${kind} sandbox here`);
    const [tool] = shellTools({ root, env: baseEnv, sandbox, ...options }) as [AnyTool];
    return tool.execute(tool.input.parse(args), context(overrides));
  }

  /** Pid of a process started by the command, as seen from here (outside any PID namespace). */
  async function hostPid(marker: string): Promise<number> {
    for (const entry of await import('node:fs/promises').then((fs) => fs.readdir('/proc'))) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = await import('node:fs/promises').then((fs) => fs.readFile(`/proc/${entry}/cmdline`, 'utf8')).catch(() => '');
      if (cmdline.includes(marker)) return Number(entry);
    }
    return 0;
  }

  it('runs in the session workspace and reports the exit code', async () => {
    const result = await shell({ command: 'pwd; echo oops >&2; exit 3' });
    const workspace = kind === 'none' ? await realpath(sessionWorkspacePath(root, 's1')) : '/workspace';
    expect(result).toBe(`exit code: 3\nstdout:\n${workspace}\n\nstderr:\noops\n`);
  });

  it('kills a command that runs too long together with its child processes', async () => {
    const marker = `hippo-timeout-${kind}-${process.pid}`;
    const started = Date.now();
    const running = shell({ command: `bash -c 'sleep 30; echo ${marker}' & sleep 30; wait`, timeout_seconds: 1 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const child = await hostPid(marker);
    const result = await running;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result).toMatch(/^killed after 1 s timeout/);
    expect(child).toBeGreaterThan(0);
    expect(await waitUntilGone(child)).toBe(true);
  });

  it('stops background jobs left behind when the command exits', async () => {
    const marker = `hippo-background-${kind}-${process.pid}`;
    const result = await shell({ command: `bash -c 'sleep 30; echo ${marker}' & sleep 0.3; echo started` });
    expect(result).toMatch(/^exit code: 0/);
    expect(await hostPid(marker)).toBe(0);
  });

  it('kills the command when the run is cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutdown')), 300);
    const started = Date.now();
    const running = shell({ command: 'sleep 30' }, {}, { signal: controller.signal });
    await expect(running).rejects.toBeInstanceOf(CancelledError);
    await expect(running).rejects.toThrow('cancelled: shutdown');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('caps long output, keeping the head and the tail with a note', async () => {
    const result = await shell({ command: 'seq 1 100000' }, { maxOutputChars: 1_000 });
    expect(result.length).toBeLessThan(1_300);
    expect(result).toMatch(/^exit code: 0\nstdout:\n1\n2\n3\n/);
    expect(result).toMatch(/\[… \d+ characters of stdout omitted \(588895 in total\); showing the first and last 500 …\]/);
    expect(result.trimEnd().endsWith('99999\n100000')).toBe(true);
  });

  it('passes only allowlisted variables to the command', async () => {
    const env = { ...baseEnv, OPENAI_BASE_URL: 'https://user:hidden@proxy', HTTPS_PROXY: 'http://u:hidden@p', SENTRY_DSN: 'https://hidden@sentry', MYSQL_PWD: 'hidden', MCP_CONFIG: '/hidden.json', LANG: 'C.UTF-8', SHOWN_BY_CHOICE: 'shown' };
    const result = await shell({ command: 'env' }, { env, envPassthrough: ['SHOWN_BY_CHOICE'] });
    expect(result).not.toContain('hidden');
    expect(result).toContain('LANG=C.UTF-8');
    expect(result).toContain('SHOWN_BY_CHOICE=shown');
  });

  it('closes stdin', async () => {
    expect(await shell({ command: 'cat; echo done', timeout_seconds: 5 })).toBe('exit code: 0\nstdout:\ndone\n');
  });

  it('reports a command killed by a signal', async () => {
    expect(await shell({ command: 'kill -TERM $$' })).toMatch(/^killed by signal SIGTERM/);
  });

  it.skipIf(kind === 'none')('stops a command from writing a file larger than the workspace limit', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 100, maxFileBytes: 1024 * 1024 };
    const result = await shell({ command: 'head -c 3000000 /dev/zero > huge.bin; stat -c %s huge.bin; rm huge.bin' }, { limits }, { sessionId: `fsize-${kind}` });
    expect(result).toContain('1048576\n');
  });

  it('removes what a command wrote past the workspace quota, many files each under the file limit, and keeps what was there', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 100, maxFileBytes: 1024 * 1024 };
    const sessionId = `quota-bytes-${kind}`;
    await shell({ command: 'echo kept > keep.txt' }, { limits }, { sessionId });
    const result = await shell({ command: 'for n in $(seq 20); do head -c 200000 /dev/zero > part-$n.bin; done; echo written' }, { limits }, { sessionId });
    expect(result).toMatch(/\nworkspace quota: the command went over it, so what it created was removed \(\d+ new entries of the workspace\)$/);
    const usage = await workspaceUsage(sessionWorkspacePath(root, sessionId), 1000);
    expect(usage.bytes).toBeLessThanOrEqual(limits.maxBytes);
    expect(await shell({ command: 'ls' }, { limits }, { sessionId })).toBe('exit code: 0\nstdout:\nkeep.txt\n');
  });

  it('removes what a command created past the entry quota', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 50, maxFileBytes: 1024 * 1024 };
    const sessionId = `quota-files-${kind}`;
    const result = await shell({ command: 'mkdir many && cd many && for n in $(seq 400); do : > f-$n; done; echo made' }, { limits }, { sessionId });
    expect(result).toMatch(/\nworkspace quota: the command went over it, so what it created was removed \(1 new entry of the workspace\)$/);
    expect((await workspaceUsage(sessionWorkspacePath(root, sessionId), 1000)).files).toBe(0);
  });

  it('kills a command while it runs once it grows the workspace past its quota', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 100, maxFileBytes: 1024 * 1024 };
    const result = await shell({ command: 'for n in 1 2 3; do head -c 600000 /dev/zero > part-$n.bin; done; sleep 30; echo finished' }, { limits, quotaCheckMs: 50 }, { sessionId: `quota-kill-${kind}` });
    expect(result).toMatch(/^killed: the workspace grew past its quota \(WORKSPACE_MAX_MB, WORKSPACE_MAX_FILES\), with every process it started\nstdout: \(empty\)\nworkspace quota: the command went over it, so what it created was removed \([23] new entries of the workspace\)$/);
  });

  it('removes what a cancelled command wrote past the quota', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 100, maxFileBytes: 1024 * 1024 };
    const sessionId = `quota-cancel-${kind}`;
    const workspace = sessionWorkspacePath(root, sessionId);
    const controller = new AbortController();
    // No measuring while it runs: only the clean-up after the cancellation can hold the quota.
    const running = shell({ command: 'for n in 1 2 3; do head -c 600000 /dev/zero > part-$n.bin; done; touch done; sleep 30' }, { limits, quotaCheckMs: 600_000 }, { sessionId, signal: controller.signal });
    await until(async () => (await readdir(workspace).catch((): string[] => [])).includes('done'), 20_000, 'the files written');
    controller.abort(new Error('stop'));
    await expect(running).rejects.toBeInstanceOf(CancelledError);
    expect(await readdir(workspace)).toEqual([]);
  });

  it('lets a command delete files in a workspace already over its quota', async () => {
    const limits = { maxBytes: 1024 * 1024, maxFiles: 100, maxFileBytes: 4 * 1024 * 1024 };
    const sessionId = `quota-over-${kind}`;
    await shell({ command: 'head -c 1500000 /dev/zero > big.bin; echo ok' }, { limits: { ...limits, maxBytes: 4 * 1024 * 1024 } }, { sessionId });
    expect(await shell({ command: 'sleep 0.6; rm big.bin; echo removed' }, { limits }, { sessionId })).toBe('exit code: 0\nstdout:\nremoved\n');
  });

  it.skipIf(kind === 'none')('limits the processes and memory of a command', async () => {
    const processLimits = { maxProcesses: 40, maxMemoryBytes: 256 * 1024 * 1024 };
    expect(await shell({ command: 'ulimit -u; ulimit -d' }, { processLimits })).toBe('exit code: 0\nstdout:\n40\n262144\n');
    const forks = await shell({ command: 'for n in $(seq 80); do sleep 2 & done 2>&1 | grep -c "Resource temporarily unavailable"; true' }, { processLimits });
    expect(forks).toMatch(/^exit code: 0\nstdout:\n[1-9]\d*\n/);
    const memory = await shell({ command: 'awk \'BEGIN { s = sprintf("%500000000s", ""); print length(s) }\' 2>/dev/null && echo fitted || echo refused' }, { processLimits });
    expect(memory).toContain('refused');
  });
});

// As root, each session runs as a uid of its own: RLIMIT_NPROC counts a user's processes, so on one
// shared user a session at its limit would hold up every other session's forks (bash retries them).
describe.each(['bwrap', 'unshare'] as const)('session users (%s)', (kind) => {
  const sandbox = sandboxes.get(kind);
  if (!sandbox || process.getuid?.() !== 0) {
    it.skip(`needs the ${kind} sandbox and root`, () => undefined);
    return;
  }
  const processLimits = { maxProcesses: 40, maxMemoryBytes: 256 * 1024 * 1024 };
  const run = (command: string, sessionId: string, signal?: AbortSignal): Promise<string> => {
    const [tool] = shellTools({ root, env: baseEnv, sandbox, processLimits }) as [AnyTool];
    return tool.execute(tool.input.parse({ command }), context({ sessionId, ...(signal ? { signal } : {}) }));
  };

  it('gives each session a user of its own, named, the same on every command, owning its workspace', async () => {
    const [first, again, other] = [await run('id -u; id -un; id -g; touch made', `uid-a-${kind}`), await run('id -u', `uid-a-${kind}`), await run('id -u', `uid-b-${kind}`)];
    const [uid = '', name, gid] = first.replace(/^exit code: 0\nstdout:\n/, '').split('\n');
    expect(name).toBe('hippo-shell');
    expect(gid).toBe(uid);
    expect(Number(uid)).toBeGreaterThanOrEqual(0x7000_0000);
    expect(again).toBe(`exit code: 0\nstdout:\n${uid}\n`);
    expect(other).toMatch(/^exit code: 0\nstdout:\n\d+\n$/);
    expect(other).not.toContain(uid);
    const { statSync } = await import('node:fs');
    expect(statSync(path.join(sessionWorkspacePath(root, `uid-a-${kind}`), 'made')).uid).toBe(Number(uid));
  });

  it('keeps a session at its process limit from holding up another session\'s commands', async () => {
    const full = `nproc-full-${kind}`;
    const controller = new AbortController();
    // dash gives up at the first fork refused (bash would retry): the session then holds its limit.
    const holding = run("sh -c 'i=0; while [ $i -lt 100 ]; do sleep 60 & i=$((i+1)); done' 2>/dev/null; touch full 2>/dev/null; sleep 60", full, controller.signal).catch((error: unknown) => error);
    try {
      await until(async () => (await readdir(sessionWorkspacePath(root, full)).catch((): string[] => [])).includes('full'), 30_000, 'the first session at its process limit');
      expect(await run('for n in $(seq 10); do sleep 0.1 & done; wait; echo forked', `nproc-other-${kind}`)).toBe('exit code: 0\nstdout:\nforked\n');
    } finally {
      controller.abort(new Error('done'));
      expect(await holding).toBeInstanceOf(CancelledError);
    }
  });
});

describe('shellEnvironment', () => {
  it('keeps the locale and terminal, sets PATH and HOME, and nothing else unless named', () => {
    const env = { PATH: '/bot/bin', LANG: 'C', LC_ALL: 'C', TERM: 'xterm', TZ: 'UTC', OPENAI_API_KEY: 'sk', EXTRA: 'x', SENTRY_DSN: 'd' };
    expect(shellEnvironment(env, '/workspace', '/usr/bin', ['EXTRA'])).toEqual({ PATH: '/usr/bin', HOME: '/workspace', LANG: 'C', LC_ALL: 'C', TERM: 'xterm', TZ: 'UTC', EXTRA: 'x' });
  });

  it('passes the locale variables by name, not whatever starts with LC_', () => {
    const env = { LC_CTYPE: 'C.UTF-8', LC_TIME: 'C', LC_MESSAGES: 'C', LC_API_TOKEN: 'secret-4711', LC_: 'x', LC_ALL_X: 'y', lc_all: 'z', XLC_ALL: 'w' };
    expect(shellEnvironment(env, '/workspace', '/usr/bin')).toEqual({ PATH: '/usr/bin', HOME: '/workspace', LC_CTYPE: 'C.UTF-8', LC_TIME: 'C', LC_MESSAGES: 'C' });
  });
});

describe('time limit', () => {
  it('does not accept a time limit above the configured one', () => {
    const [tool] = shellTools({ root, env: baseEnv, timeoutMs: 10_000 }) as [AnyTool];
    expect(tool.input.safeParse({ command: 'true', timeout_seconds: 11 }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'true', timeout_seconds: 10 }).success).toBe(true);
  });
});
