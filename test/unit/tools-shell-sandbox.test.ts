// The shell sandbox against a bot process that holds secrets: a real child process
// (test/fakes/shell-tool-host.ts) with fake secrets in its environment runs the shell tool.
import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { detectShellSandbox, type SandboxKind } from '../../src/tools/shell-sandbox.js';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import { repoRoot } from '../support/processes.js';

const FAKE_SECRETS = { OPENAI_API_KEY: 'sk-fake-secret-4711', SLACK_BOT_TOKEN: 'xoxb-fake-secret-4711', DATABASE_URL: 'postgres://u:fake-secret-4711@db/x' };

let base: string;
let dataDir: string;
let root: string;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'hippo-sandbox-'));
  await chmod(base, 0o755);
  dataDir = path.join(base, 'data');
  root = path.join(dataDir, 'workspaces');
  await mkdir(path.join(root, 'other-session'), { recursive: true });
  await writeFile(path.join(dataDir, 'pglite-secret.txt'), 'database-file-4711', { mode: 0o644 });
  await writeFile(path.join(root, 'other-session', 'notes.md'), 'other-session-4711', { mode: 0o644 });
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Runs `commands` through the shell tool inside a process holding FAKE_SECRETS; returns each result. */
function runInBot(kind: 'bwrap' | 'unshare' | 'none', commands: string[]): string[] {
  const output = execFileSync(process.execPath, ['--import', 'tsx', 'test/fakes/shell-tool-host.ts', root, kind, ...commands], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', HOME: base, ...FAKE_SECRETS },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return output.trim().split('\n').map((line) => (JSON.parse(line) as { result: string }).result);
}

/** Process ids whose command line contains `marker`, seen from outside every namespace, except `except`. */
function processesWith(marker: string, except?: number): string {
  try {
    const ids = execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n');
    return ids.filter((id) => id !== '' && Number(id) !== except && !ended(id)).join(' ');
  } catch {
    return '';
  }
}

/** A zombie has ended: it only waits for its new parent (init, after the bot died) to reap it. */
function ended(id: string): boolean {
  try {
    return /^\d+ \(.*\) Z /.test(readFileSync(`/proc/${id}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** Which sandboxes work here (bwrap needs bubblewrap installed; unshare needs root). */
const probeRoot = await mkdtemp(path.join(tmpdir(), 'hippo-sandbox-probe-'));
await chmod(probeRoot, 0o755);
const available = new Set<SandboxKind>();
for (const kind of ['bwrap', 'unshare'] as const) {
  if ((await detectShellSandbox({ root: probeRoot, allowUnsandboxed: false, only: kind }).catch(() => undefined))?.kind === kind) available.add(kind);
}
await rm(probeRoot, { recursive: true, force: true });

describe.each(['bwrap', 'unshare'] as const)('shell sandbox (%s)', (kind) => {
  if (!available.has(kind)) {
    it.skip(`needs the ${kind} sandbox, which this machine does not offer`, () => undefined);
    return;
  }

  it('shows the command no secret of the bot: not in its environment, not in /proc', () => {
    const results = runInBot(kind, [
      'env',
      'tr "\\0" "\\n" < /proc/$PPID/environ',
      'tr "\\0" "\\n" < /proc/1/environ',
      'cat /proc/*/environ | tr "\\0" "\\n"',
      'ps -eo pid,args',
    ]);
    expect(results).toHaveLength(5);
    for (const result of results) expect(result).not.toContain('fake-secret-4711');
    // Only the sandbox's own processes are there to see.
    expect(results[4]?.split('\n').filter((line) => /^\s*\d+ /.test(line)).length).toBeLessThanOrEqual(4);
  });

  it('cannot read DATA_DIR or other sessions outside the workspace', () => {
    const [absolute, relative, listing, rootView, everything] = runInBot(kind, [
      `cat ${path.join(dataDir, 'pglite-secret.txt')} ${path.join(root, 'other-session', 'notes.md')}`,
      'cat ../other-session/notes.md ../../pglite-secret.txt; ls -la .. ../..',
      `ls -la ${dataDir} ${root}`,
      'ls /; cat /proc/1/root/../../pglite-secret.txt',
      // Every file the command can see, but the system's own (/usr, /proc, /sys, /dev).
      'grep -rl -e database-file-4711 -e other-session-4711 / --exclude-dir=usr --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; ls -laR / 2>/dev/null | grep -c . ; ls -laR /workspace /tmp',
    ]);
    expect(everything).not.toMatch(/pglite-secret|other-session/);
    for (const result of [absolute, relative, listing, rootView]) {
      expect(result).not.toContain('database-file-4711');
      expect(result).not.toContain('other-session-4711');
    }
    expect(listing).not.toContain('other-session');
  });

  // /proc/self/mountinfo still names the directory bound at /workspace: a bind mount shows its source.
  it('does not tell the command where the server keeps its files in its paths, environment or command lines', () => {
    const [result] = runInBot(kind, ['pwd; echo "$HOME"; cat /proc/[0-9]*/cmdline | tr "\\0" " "']);
    expect(result).toMatch(/^exit code: 0\nstdout:\n\/workspace\n\/workspace\n/);
    expect(result).not.toContain(root);
  });

  it('kills what the command started with setsid when the time limit strikes', async () => {
    const marker = `hippo-setsid-${kind}-${process.pid}`;
    const [result] = runInBot(kind, [`setsid bash -c 'sleep 1000; echo ${marker}' & sleep 0.5; sleep 30`]);
    expect(result).toMatch(/^killed after 5 s timeout/);
    // The namespace goes down with its first process; give the kernel a moment.
    // Polled up to 10 s: on a loaded machine the kill reaches the sandbox after a moment.
    for (let attempt = 0; attempt < 200 && processesWith(marker) !== ''; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesWith(marker)).toBe('');
  });

  it('kills setsid children when the command ends normally, too', () => {
    const marker = `hippo-setsid-exit-${kind}-${process.pid}`;
    const [result] = runInBot(kind, [`setsid bash -c 'sleep 1000; echo ${marker}' & sleep 0.3; echo started`]);
    expect(result).toMatch(/^exit code: 0/);
    expect(processesWith(marker)).toBe('');
  });

  it('ends the command when the bot process dies', async () => {
    const marker = `hippo-orphan-${kind}-${process.pid}`;
    const bot = spawn(process.execPath, ['--import', 'tsx', 'test/fakes/shell-tool-host.ts', root, kind, `bash -c 'sleep 1000; echo ${marker}'`], {
      cwd: repoRoot,
      env: { PATH: process.env['PATH'] ?? '', HOME: base },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => bot.once('exit', resolve));
    // Wait for the command itself, not just the bot (whose arguments name the marker too).
    for (let attempt = 0; attempt < 200 && processesWith(marker, bot.pid) === ''; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesWith(marker, bot.pid)).not.toBe('');
    bot.kill('SIGKILL');
    await exited;
    // Polled up to 10 s: on a loaded machine the kill reaches the sandbox after a moment.
    for (let attempt = 0; attempt < 200 && processesWith(marker) !== ''; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processesWith(marker)).toBe('');
  });

  it('shows only the /etc entries a shell needs: a settings file under /etc is out of reach', async () => {
    // As deploy/ installs it: /etc/hippo/hippo.env, readable by the service's user.
    const secretDirectory = `/etc/hippo-test-${kind}-${process.pid}`;
    await mkdir(secretDirectory, { recursive: true });
    await writeFile(path.join(secretDirectory, 'hippo.env'), 'SLACK_BOT_TOKEN=xoxb-etc-secret-4711\n', { mode: 0o644 });
    await writeFile(`${secretDirectory}.env`, 'OPENAI_API_KEY=sk-etc-secret-4711\n', { mode: 0o644 });
    try {
      const [direct, listing, search, works] = runInBot(kind, [
        `cat ${secretDirectory}/hippo.env ${secretDirectory}.env`,
        'ls -a /etc /etc/ssl',
        'grep -rs etc-secret-4711 /etc; echo searched',
        // What a shell needs still works: users, the loader, alternatives, certificates.
        'id -un; awk "BEGIN { print 6 * 7 }"; ls /etc/ssl/certs | grep -c .; if command -v python3 > /dev/null; then python3 -c "import ssl, socket; print(6 * 7)"; else echo 42; fi',
      ]);
      expect(direct).not.toContain('etc-secret-4711');
      expect(direct).toContain('No such file or directory');
      expect(listing).toMatch(/^exit code: 0\nstdout:\n/);
      expect(listing).toContain('passwd');
      expect(listing).not.toContain(path.basename(secretDirectory));
      expect(listing).not.toMatch(/\b(shadow|hostname|machine-id|private)\b/);
      expect(search).toMatch(/^exit code: 0\nstdout:\nsearched\n/);
      expect(works).toMatch(/^exit code: 0\nstdout:\n[\w-]+\n42\n[1-9]\d*\n42\n$/);
    } finally {
      await rm(secretDirectory, { recursive: true, force: true });
      await rm(`${secretDirectory}.env`, { force: true });
    }
  });

  it('binds CA certificates but not the host\'s private keys or its system git config', async () => {
    // What an operator may keep there: a key next to the certificates, a token in a git config.
    const tag = `hippo-test-${kind}-${process.pid}`;
    const made: string[] = [];
    const place = async (file: string, text: string): Promise<void> => {
      for (let directory = path.dirname(file); !existsSync(directory); directory = path.dirname(directory)) made.push(directory);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text, { mode: 0o644 });
      made.push(file);
    };
    const gitconfigBefore = existsSync('/etc/gitconfig') ? readFileSync('/etc/gitconfig', 'utf8') : undefined;
    try {
      await place(`/etc/pki/tls/private/${tag}.key`, 'PRIVATE-KEY-4711');
      await place(`/etc/ssl/private/${tag}.key`, 'PRIVATE-KEY-4711');
      await place(`/etc/pki/tls/certs/${tag}.pem`, 'PUBLIC-CERT-4711');
      await place(`/etc/pki/ca-trust/source/anchors/${tag}.pem`, 'PUBLIC-ANCHOR-4711');
      if (gitconfigBefore === undefined) await place('/etc/gitconfig', '[credential]\n\thelper = store\n[http]\n\textraHeader = Authorization: Bearer gitconfig-secret-4711\n');
      const [keys, search, certs, git] = runInBot(kind, [
        `cat /etc/pki/tls/private/${tag}.key /etc/ssl/private/${tag}.key /etc/gitconfig 2>&1; echo read`,
        'grep -rs -e PRIVATE-KEY-4711 -e gitconfig-secret-4711 /etc; ls -a /etc/pki /etc/pki/tls /etc/ssl; echo searched',
        `cat /etc/pki/tls/certs/${tag}.pem /etc/pki/ca-trust/source/anchors/${tag}.pem`,
        'git config --system --list 2>&1; echo listed',
      ]);
      expect(keys).not.toContain('PRIVATE-KEY-4711');
      expect(keys).not.toContain('[credential]');
      expect(keys).toMatch(/No such file or directory[\s\S]*No such file or directory[\s\S]*No such file or directory\nread\n/);
      expect(search).not.toMatch(/PRIVATE-KEY-4711|gitconfig-secret-4711/);
      expect(search).not.toMatch(/\bprivate\b/);
      expect(search).toContain('certs');
      expect(certs).toBe('exit code: 0\nstdout:\nPUBLIC-CERT-4711PUBLIC-ANCHOR-4711');
      expect(git).not.toMatch(/credential|extraheader|gitconfig-secret/i);
    } finally {
      for (const entry of made.reverse()) await rm(entry, { recursive: true, force: true });
    }
  });

  it('has no network unless SHELL_NETWORK is set', () => {
    const [result] = runInBot(kind, ['(echo > /dev/tcp/127.0.0.1/5432) 2>&1 && echo connected || echo refused']);
    expect(result).not.toContain('connected');
  });

  it('lets the command write its workspace, but not the system', () => {
    const [result] = runInBot(kind, ['echo made > made.txt && cat made.txt; touch /usr/x 2>&1; touch /etc/x 2>&1; id -u']);
    expect(result).toMatch(/^exit code: \d+\nstdout:\nmade\n/);
    expect(result).toMatch(/\/usr\/x.*(Read-only|Permission denied)/);
    if (process.getuid?.() === 0) expect(result).not.toMatch(/\n0\n/);
  });
});

describe('detectShellSandbox', () => {
  it('refuses to run the shell without a sandbox unless SHELL_UNSANDBOXED is set', async () => {
    const nowhere = path.join(base, 'empty-bin');
    await mkdir(nowhere, { recursive: true });
    const detecting = detectShellSandbox({ root, allowUnsandboxed: false, searchPath: nowhere });
    await expect(detecting).rejects.toBeInstanceOf(ConfigError);
    await expect(detecting).rejects.toThrow(/no sandbox .*SHELL_UNSANDBOXED=true/);
    expect((await detectShellSandbox({ root, allowUnsandboxed: true, searchPath: nowhere })).kind).toBe('none');
  });

  it.runIf(process.getuid?.() === 0 && available.has('bwrap'))('falls back to unshare when the shell user cannot reach the workspaces', async () => {
    const hidden = await mkdtemp(path.join(tmpdir(), 'hippo-hidden-'));
    try {
      expect((await detectShellSandbox({ root: path.join(hidden, 'workspaces'), allowUnsandboxed: false })).kind).toBe('unshare');
      expect((await detectShellSandbox({ root, allowUnsandboxed: false })).kind).toBe('bwrap');
    } finally {
      await rm(hidden, { recursive: true, force: true });
    }
  });

  it.runIf(process.getuid?.() === 0)('names SHELL_USER when it is no user here', async () => {
    await expect(detectShellSandbox({ root, allowUnsandboxed: false, shellUser: 'no-such-user-4711' })).rejects.toThrow(/SHELL_USER "no-such-user-4711" is not a user/);
  });
});

describe('sessionWorkspacePath', () => {
  it('puts the test workspace where the sandbox binds it', () => {
    expect(sessionWorkspacePath(root, 's1')).toBe(path.join(root, 's1'));
  });
});
