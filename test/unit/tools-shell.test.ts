import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError } from '../../src/core/errors.js';
import type { AnyTool, ToolContext } from '../../src/core/tool.js';
import { sanitizeEnvironment, shellTools, type ShellToolsOptions } from '../../src/tools/shell.js';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import { toolContext } from '../support/tool-context.js';

const context = toolContext;

let root: string;
// A fresh HOME keeps the login shell from running the machine's ~/.profile: fast, and a timeout
// kill cannot interrupt someone's profile script half-way (and leave its lock files behind).
let baseEnv: Record<string, string | undefined>;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'hippo-shell-'));
  const home = path.join(root, 'home');
  await mkdir(home);
  baseEnv = { PATH: process.env.PATH, HOME: home };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});


async function shell(args: { command: string; timeout_seconds?: number }, options: Partial<ShellToolsOptions> = {}, overrides: Partial<ToolContext> = {}): Promise<string> {
  const [tool] = shellTools({ root, env: baseEnv, ...options }) as [AnyTool];
  return tool.execute(tool.input.parse(args), context(overrides));
}

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

describe('shell tool', () => {
  it('runs in the session workspace and reports the exit code', async () => {
    const result = await shell({ command: 'pwd; echo oops >&2; exit 3' });
    const workspace = await realpath(sessionWorkspacePath(root, 's1'));
    expect(result).toBe(`exit code: 3\nstdout:\n${workspace}\n\nstderr:\noops\n`);
  });

  it('kills a command that runs too long together with its child processes', async () => {
    const started = Date.now();
    const result = await shell({ command: 'sleep 30 & echo child=$!; sleep 30; wait', timeout_seconds: 1 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result).toMatch(/^killed after 1 s timeout/);
    const child = Number(/child=(\d+)/.exec(result)?.[1]);
    expect(child).toBeGreaterThan(0);
    expect(await waitUntilGone(child)).toBe(true);
  });

  it('stops background jobs left behind when the command exits', async () => {
    const result = await shell({ command: 'sleep 30 & echo child=$!' });
    expect(result).toMatch(/^exit code: 0/);
    const child = Number(/child=(\d+)/.exec(result)?.[1]);
    expect(await waitUntilGone(child)).toBe(true);
  });

  it('kills the command when the run is cancelled', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutdown')), 200);
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

  it('does not pass secrets to the command', async () => {
    const env = {
      ...baseEnv,
      OPENAI_API_KEY: 'sk-hidden',
      SLACK_BOT_TOKEN: 'xoxb-hidden',
      DATABASE_URL: 'postgres://u:hidden@db/x',
      SMTP_PASSWORD: 'hidden',
      AWS_SECRET_ACCESS_KEY: 'hidden',
      GOOGLE_APPLICATION_CREDENTIALS: '/hidden.json',
      VISIBLE_SETTING: 'shown',
    };
    const result = await shell({ command: 'env' }, { env });
    expect(result).not.toContain('hidden');
    expect(result).toContain('VISIBLE_SETTING=shown');
    expect(Object.keys(sanitizeEnvironment(env)).sort()).toEqual(['HOME', 'PATH', 'VISIBLE_SETTING']);
  });

  it('closes stdin', async () => {
    expect(await shell({ command: 'cat; echo done', timeout_seconds: 5 })).toBe('exit code: 0\nstdout:\ndone\n');
  });

  it('reports a command killed by a signal', async () => {
    expect(await shell({ command: 'kill -TERM $$' })).toMatch(/^killed by signal SIGTERM/);
  });

  it('does not accept a time limit above the configured one', () => {
    const [tool] = shellTools({ root, env: baseEnv, timeoutMs: 10_000 }) as [AnyTool];
    expect(tool.input.safeParse({ command: 'true', timeout_seconds: 11 }).success).toBe(false);
    expect(tool.input.safeParse({ command: 'true', timeout_seconds: 10 }).success).toBe(true);
  });
});
