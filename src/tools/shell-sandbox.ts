// Where shell commands run. Thread text is untrusted and the bot's process holds every secret
// (tokens in its environment, DATA_DIR, the database on loopback), so a command must not see the
// bot: it runs in new PID, mount, IPC, UTS (and by default network) namespaces, in a root made of
// the read-only system directories plus the session workspace at /workspace, as an unprivileged
// user when the bot is root: a uid and gid of the session's own (sessionUser), so the process
// limit (RLIMIT_NPROC counts a user's processes) is each session's, never shared with another's.
// The PID namespace also makes "everything the command started" exact: when its first process
// dies the kernel kills the rest, setsid or not.
//
//   bwrap    bubblewrap; as root it is started as the session's user (setpriv), otherwise as the bot's user
//   unshare  util-linux unshare + mount + chroot + setpriv (root only): the same view, built here
//   none     no isolation (only with SHELL_UNSANDBOXED=true): a process group and a clean environment
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { lchown, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../core/errors.js';

/** How commands are isolated. */
export type SandboxKind = 'bwrap' | 'unshare' | 'none';

/** A user a command runs as. */
export interface SandboxUser {
  name: string;
  uid: number;
  gid: number;
}

/** A detected sandbox: its kind and, when the bot is root, the user it was checked with (SHELL_USER). */
export interface ShellSandbox {
  kind: SandboxKind;
  user?: SandboxUser;
  /** Let commands use the network (SHELL_NETWORK); otherwise they get only their own loopback. */
  network: boolean;
}

/** Settings of detectShellSandbox. */
export interface DetectSandboxOptions {
  /** The workspaces root: the probe binds it as bwrap would bind a workspace. */
  root: string;
  /** User to run commands as when the bot is root (SHELL_USER, default "nobody"). */
  shellUser?: string;
  /** SHELL_UNSANDBOXED: run without isolation when none is available. */
  allowUnsandboxed: boolean;
  /** SHELL_NETWORK. */
  network?: boolean;
  /** Try only this kind (tests); default: bwrap, then unshare. */
  only?: SandboxKind;
  /** PATH the sandbox programs are looked up in (default SANDBOX_PATH). */
  searchPath?: string;
}

/** PATH inside the sandbox (the host's PATH may name directories the sandbox does not have). */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Where the workspace appears inside the sandbox. */
export const SANDBOX_WORKSPACE = '/workspace';

/**
 * The uids (and gids) sessions' commands run as when the bot is root: SESSION_UID_BASE plus a
 * 24-bit hash of the session id, the same after a restart. Above systemd-nspawn's container
 * ranges (up to 0x6FFFFFFF) and below its foreign range (0x7FFE0000); two sessions share one only
 * on a hash collision (one chance in 16.7 million for a pair), and then only their process limit:
 * neither sees the other's workspace.
 */
export const SESSION_UID_BASE = 0x7000_0000;
export const SESSION_UID_COUNT = 1 << 24;

/** The name of a session's user inside the sandbox (its line in the sandbox's /etc/passwd and /etc/group). */
export const SESSION_USER_NAME = 'hippo-shell';

/** The user `sessionId`'s commands run as: its own uid and gid when the bot is root, else none (the bot's user). */
export function sessionUser(sandbox: ShellSandbox, sessionId: string): SandboxUser | undefined {
  if (!sandbox.user || sandbox.kind === 'none') return undefined;
  const id = SESSION_UID_BASE + (createHash('sha256').update(sessionId).digest().readUInt32BE(0) % SESSION_UID_COUNT);
  return { name: SESSION_USER_NAME, uid: id, gid: id };
}

/** The host's passwd and group with a line for `user` added (host files unreadable: that line alone). */
function userDatabases(user: SandboxUser): { passwd: string; group: string } {
  const host = (file: string): string => {
    try {
      const text = readFileSync(file, 'utf8');
      return text === '' || text.endsWith('\n') ? text : `${text}\n`;
    } catch {
      return '';
    }
  };
  return {
    passwd: `${host('/etc/passwd')}${passwdEntry(user)}\n`,
    group: `${host('/etc/group')}${groupEntry(user)}\n`,
  };
}

function passwdEntry(user: SandboxUser): string {
  return `${user.name}:x:${user.uid}:${user.gid}:Hippo session shell:${SANDBOX_WORKSPACE}:/bin/bash`;
}

function groupEntry(user: SandboxUser): string {
  return `${user.name}:x:${user.gid}:`;
}

/** Top-level system entries made visible read-only (merged-/usr systems have links here). */
const SYSTEM_ENTRIES = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The /etc entries a shell needs, and nothing else: the host's /etc may hold the bot's settings
 * (deploy/hippo.env with its tokens) and other services' secrets. Loader cache, user and group
 * names, certificates, the alternatives links many commands are, shell profiles, time zone.
 * Certificates are the public CA ones only (Debian's /etc/ssl/certs, Red Hat's /etc/pki/tls/certs
 * and /etc/pki/ca-trust), never /etc/ssl/private or /etc/pki/tls/private with the host's keys;
 * and no /etc/gitconfig, where an operator may keep a credential helper or a token.
 */
export const ETC_ENTRIES = [
  '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/nsswitch.conf', '/etc/passwd', '/etc/group',
  '/etc/ssl/certs', '/etc/ssl/openssl.cnf', '/etc/ca-certificates', '/etc/ca-certificates.conf',
  '/etc/pki/tls/certs', '/etc/pki/tls/cert.pem', '/etc/pki/tls/openssl.cnf', '/etc/pki/ca-trust', '/etc/pki/java/cacerts',
  '/etc/alternatives', '/etc/localtime',
  '/etc/timezone', '/etc/locale.alias', '/etc/os-release', '/etc/debian_version', '/etc/lsb-release', '/etc/profile',
  '/etc/profile.d', '/etc/bash.bashrc', '/etc/inputrc', '/etc/mime.types', '/etc/magic', '/etc/magic.mime',
  '/etc/services', '/etc/protocols', '/etc/perl',
  // Language runtimes keep part of their installation here (Debian links /usr/lib/… to these).
  ...etcRuntimeEntries(),
];

/** /etc/python3*, /etc/java-*: configuration of runtimes in /usr, read once at start-up. */
function etcRuntimeEntries(): string[] {
  try {
    return readdirSync('/etc').filter((name) => /^(python3(\.\d+)?|java-\d+-openjdk)$/.test(name)).map((name) => `/etc/${name}`);
  } catch {
    return [];
  }
}

/** /etc entries added when commands have the network (name resolution). */
export const ETC_NETWORK_ENTRIES = ['/etc/resolv.conf', '/etc/hosts', '/etc/host.conf', '/etc/gai.conf'];

/** The /etc entries bound into a sandbox. */
export function etcEntries(network: boolean): string[] {
  return [...ETC_ENTRIES, ...(network ? ETC_NETWORK_ENTRIES : [])];
}

/**
 * Builds the sandbox root in a fresh mount namespace, as root: a tmpfs over /tmp (private to the
 * namespace) becomes the new root; /usr and the lib/bin entries are bound read-only, the /etc
 * entries a shell needs copied (one cp, not two mounts each: a command starts faster; links kept,
 * but those of the name resolution files followed, as they may point into /run) and made
 * read-only (the session user's passwd and group lines added), the workspace (the current
 * directory, so a hidden path still works) read-write at /workspace, a fresh /proc of the new PID
 * namespace, a few device nodes. Then chroot, drop to the user, limit
 * the size of files written, the processes and memory, and run bash in /workspace. Arguments:
 * uid gid prlimit-options etc-entries etc-network-entries command passwd-line group-line.
 * This shell stays PID 1 (bash as PID 1 would ignore its own SIGTERM); when it exits, the kernel
 * kills whatever is left in the namespace.
 */
const UNSHARE_SETUP = `set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
new=/tmp
mount -t tmpfs -o mode=0755,size=64m hippo-sandbox "$new"
mkdir -p "$new/usr" "$new/etc"; mount --rbind /usr "$new/usr"; mount -o remount,bind,ro "$new/usr"
present=""; for entry in $4; do if [ -e "$entry" ]; then present="$present $entry"; fi; done
if [ -n "$present" ]; then (cd / && cp -a --parents $present "$new"); fi
present=""; for entry in $5; do if [ -e "$entry" ]; then present="$present $entry"; fi; done
if [ -n "$present" ]; then (cd / && cp -L --parents $present "$new"); fi
if [ -n "$7" ]; then printf '%s\n' "$7" >> "$new/etc/passwd"; printf '%s\n' "$8" >> "$new/etc/group"; fi
mount --bind "$new/etc" "$new/etc"; mount -o remount,bind,ro "$new/etc"
for entry in ${SYSTEM_ENTRIES.join(' ')}; do
  if [ -L "$entry" ]; then ln -s "$(readlink "$entry")" "$new$entry"
  elif [ -d "$entry" ]; then mkdir -p "$new$entry"; mount --rbind "$entry" "$new$entry"; mount -o remount,bind,ro "$new$entry"; fi
done
mkdir -p "$new${SANDBOX_WORKSPACE}" "$new/proc" "$new/dev" "$new/tmp"
mount --no-canonicalize --bind . "$new${SANDBOX_WORKSPACE}"
mount -t proc -o nosuid,nodev,noexec proc "$new/proc"
for node in null zero full random urandom tty; do touch "$new/dev/$node"; mount --bind "/dev/$node" "$new/dev/$node"; done
ln -s /proc/self/fd "$new/dev/fd"; ln -s /proc/self/fd/0 "$new/dev/stdin"; ln -s /proc/self/fd/1 "$new/dev/stdout"; ln -s /proc/self/fd/2 "$new/dev/stderr"
chmod 1777 "$new/tmp"
cd /
chroot "$new" /usr/bin/setpriv --reuid="$1" --regid="$2" --clear-groups --no-new-privs -- /usr/bin/prlimit $3 -- /bin/bash -c 'cd ${SANDBOX_WORKSPACE} && exec bash -lc "$1"' hippo-shell "$6" && exit 0 || exit $?`;

/** What to spawn for one command. */
export interface SandboxInvocation {
  file: string;
  args: string[];
  /** Working directory of the spawned process (the workspace on the host). */
  cwd: string;
  /** NUL-separated arguments to write to the process's fd 3 (bwrap --args 3). */
  fd3?: string;
  /** What to write to fds 4, 5, … (bwrap --ro-bind-data: the sandbox's /etc/passwd and /etc/group). */
  moreFds?: string[];
}

/** Settings of one sandboxed command. */
export interface CommandSpec {
  command: string;
  /** The workspace on the host (a real path). */
  workspace: string;
  /** The environment the command gets (already an allowlist). */
  env: Record<string, string>;
  /** Largest file the command may write, in bytes (RLIMIT_FSIZE). */
  maxFileBytes: number;
  /** Process and memory limits (default DEFAULT_PROCESS_LIMITS). */
  processLimits?: ProcessLimits;
  /** The user to run as when the bot is root (sessionUser); default the sandbox's user. */
  user?: SandboxUser;
}

/** Limits of a command's processes (SHELL_MAX_PROCESSES, SHELL_MAX_MEMORY_MB). */
export interface ProcessLimits {
  /** Processes and threads of the command's user (the session's, when the bot is root) at once (RLIMIT_NPROC): no fork bomb. */
  maxProcesses: number;
  /** Bytes of data one process may allocate (RLIMIT_DATA; unlike RLIMIT_AS it leaves address space reservations alone). */
  maxMemoryBytes: number;
}

/** Defaults of ProcessLimits: 256 processes, 2 GiB per process. */
export const DEFAULT_PROCESS_LIMITS: ProcessLimits = { maxProcesses: 256, maxMemoryBytes: 2 * 1024 * 1024 * 1024 };

/** prlimit's options for a command: file size, process count, memory. */
function prlimitOptions(spec: CommandSpec): string[] {
  const limits = spec.processLimits ?? DEFAULT_PROCESS_LIMITS;
  return [`--fsize=${spec.maxFileBytes}`, `--nproc=${limits.maxProcesses}`, `--data=${limits.maxMemoryBytes}`];
}

/** The process to spawn for `spec` in `sandbox`. */
export function sandboxInvocation(sandbox: ShellSandbox, spec: CommandSpec): SandboxInvocation {
  if (sandbox.kind === 'none') return { file: 'bash', args: ['-lc', spec.command], cwd: spec.workspace };
  if (sandbox.kind === 'unshare') {
    const user = spec.user ?? sandbox.user ?? { uid: 65534, gid: 65534 };
    const [passwdLine, groupLine] = spec.user ? [passwdEntry(spec.user), groupEntry(spec.user)] : ['', ''];
    const namespaces = ['--pid', '--fork', '--kill-child=SIGKILL', '--mount', '--uts', '--ipc', ...(sandbox.network ? [] : ['--net']), '--propagation', 'private'];
    // setpriv --pdeathsig: if the bot dies, unshare dies, and with it (--kill-child) the namespace.
    return {
      file: 'setpriv',
      args: ['--pdeathsig=KILL', '--', 'unshare', ...namespaces, '--', '/bin/sh', '-c', UNSHARE_SETUP, 'hippo-sandbox', String(user.uid), String(user.gid), prlimitOptions(spec).join(' '),
        ETC_ENTRIES.join(' '), (sandbox.network ? ETC_NETWORK_ENTRIES : []).join(' '), spec.command, passwdLine, groupLine,
      ],
      cwd: spec.workspace,
    };
  }
  const bwrap = ['--unshare-all', ...(sandbox.network ? ['--share-net'] : []), '--die-with-parent', '--new-session', '--clearenv'];
  for (const [name, value] of Object.entries(spec.env)) bwrap.push('--setenv', name, value);
  bwrap.push('--ro-bind', '/usr', '/usr', '--dir', '/etc');
  for (const entry of etcEntries(sandbox.network)) bwrap.push('--ro-bind-try', entry, entry);
  // The session's user gets a name: the host's passwd and group plus its line, from fds 4 and 5.
  const user = spec.user ?? sandbox.user;
  const databases = spec.user ? userDatabases(spec.user) : undefined;
  if (databases) bwrap.push('--ro-bind-data', '4', '/etc/passwd', '--ro-bind-data', '5', '/etc/group');
  for (const entry of SYSTEM_ENTRIES) bwrap.push('--ro-bind-try', entry, entry);
  bwrap.push('--proc', '/proc', '--dev', '/dev', '--size', String(64 * 1024 * 1024), '--tmpfs', '/tmp', '--bind', spec.workspace, SANDBOX_WORKSPACE, '--chdir', SANDBOX_WORKSPACE);
  // The options go through fd 3, not the command line, which the sandbox's PID 1 shows: it would
  // tell the command where the server keeps its files.
  const fd3 = `${bwrap.map((argument) => `${argument}\0`).join('')}`;
  const command = ['--args', '3', '--', 'prlimit', ...prlimitOptions(spec), '--', 'bash', '-lc', spec.command];
  const moreFds = databases ? [databases.passwd, databases.group] : undefined;
  if (!user) return { file: 'bwrap', args: command, cwd: spec.workspace, fd3, ...(moreFds ? { moreFds } : {}) };
  const { uid, gid } = user;
  return { file: 'setpriv', args: [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--no-new-privs', '--', 'bwrap', ...command], cwd: spec.workspace, fd3, ...(moreFds ? { moreFds } : {}) };
}

/**
 * Finds a sandbox that works here by running `true` in each candidate; throws ConfigError when
 * none does and SHELL_UNSANDBOXED is not set.
 */
export async function detectShellSandbox(options: DetectSandboxOptions): Promise<ShellSandbox> {
  const network = options.network ?? false;
  const isRoot = process.getuid?.() === 0;
  const user = isRoot ? await lookUpUser(options.shellUser ?? 'nobody') : undefined;
  await mkdir(options.root, { recursive: true });
  const failures: string[] = [];
  const candidates: SandboxKind[] = options.only ? [options.only] : ['bwrap', 'unshare'];
  for (const kind of candidates) {
    if (kind === 'none') return { kind, network: true };
    if (kind === 'unshare' && !isRoot) {
      failures.push('unshare: needs the bot to run as root');
      continue;
    }
    const sandbox: ShellSandbox = { kind, network, ...(user ? { user } : {}) };
    const problem = await probe(sandbox, options.root, options.searchPath ?? SANDBOX_PATH);
    if (problem === undefined) return sandbox;
    failures.push(`${kind}: ${problem}`);
  }
  if (options.allowUnsandboxed) return { kind: 'none', network: true };
  throw new ConfigError(
    `config: the shell tool has no sandbox here (${failures.join('; ')}); install bubblewrap (apt-get install bubblewrap), or set SHELL_UNSANDBOXED=true to run commands unsandboxed as the bot's user, with its files, environment and processes in reach`,
  );
}

/** Gives the workspace to `user` (root modes: the session's user), so commands can write where the bot wrote. */
export async function handWorkspaceTo(sandbox: ShellSandbox, workspace: string, maxEntries: number, user: SandboxUser | undefined = sandbox.user): Promise<void> {
  if (!user || sandbox.kind === 'none') return;
  const { uid, gid } = user;
  await lchown(workspace, uid, gid);
  let seen = 0;
  const pending = [workspace];
  while (pending.length > 0 && seen < maxEntries) {
    const directory = pending.pop() ?? workspace;
    const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      seen += 1;
      if (seen > maxEntries) break;
      const entryPath = path.join(directory, entry.name);
      // lchown: a link is given away itself, never what it points to.
      const info = await lstat(entryPath).catch(() => undefined);
      if (info && (info.uid !== uid || info.gid !== gid)) await lchown(entryPath, uid, gid).catch(() => undefined);
      if (entry.isDirectory()) pending.push(entryPath);
    }
  }
}

async function probe(sandbox: ShellSandbox, root: string, searchPath: string): Promise<string | undefined> {
  // As SHELL_USER, the way a session's user runs (its passwd and group lines handed over too).
  const user = sandbox.user && sandbox.kind !== 'none' ? { ...sandbox.user, name: SESSION_USER_NAME } : undefined;
  const invocation = sandboxInvocation(sandbox, { command: 'true', workspace: root, env: { PATH: SANDBOX_PATH }, maxFileBytes: 1024 * 1024, ...(user ? { user } : {}) });
  return new Promise((resolve) => {
    const child = spawn(invocation.file, invocation.args, { cwd: invocation.cwd, env: { PATH: searchPath }, stdio: invocationStdio(invocation, 'ignore'), timeout: 10_000 });
    writeFd3(child, invocation.fd3, invocation.moreFds);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 500) stderr += chunk.toString('utf8');
    });
    child.once('error', (error) => resolve(error.message));
    child.once('close', (code, signal) => resolve(code === 0 ? undefined : (stderr.trim().split('\n')[0] ?? '') || `exit ${code ?? signal ?? '?'}`));
  });
}

/** Hands `fd3` (if any) to the child on its fd 3, and `moreFds` on fds 4, 5, …, and closes them. */
export function writeFd3(child: ChildProcess, fd3: string | undefined, moreFds: readonly string[] = []): void {
  [fd3 ?? '', ...moreFds].forEach((text, index) => {
    const stream = child.stdio[3 + index];
    if (!stream || !('write' in stream)) return;
    // The child may fail before reading it; that shows in its exit status, not here.
    stream.on('error', () => undefined);
    stream.end(text);
  });
}

/** The stdio of a spawned invocation: stdin closed, stdout and stderr piped, a pipe per fd it is handed. */
export function invocationStdio(invocation: SandboxInvocation, stdout: 'pipe' | 'ignore' = 'pipe'): Array<'pipe' | 'ignore'> {
  return ['ignore', stdout, 'pipe', 'pipe', ...(invocation.moreFds ?? []).map((): 'pipe' => 'pipe')];
}

async function lookUpUser(name: string): Promise<{ name: string; uid: number; gid: number }> {
  const field = async (flag: '-u' | '-g'): Promise<number> =>
    new Promise((resolve, reject) => {
      const child = spawn('id', [flag, '--', name], { stdio: ['ignore', 'pipe', 'ignore'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.once('error', reject);
      child.once('close', (code) => (code === 0 && /^\d+\s*$/.test(output) ? resolve(Number(output)) : reject(new Error(`no user ${name}`))));
    });
  try {
    const [uid, gid] = await Promise.all([field('-u'), field('-g')]);
    if (uid === 0) throw new ConfigError(`config: SHELL_USER ${name} is root; name an unprivileged user`);
    return { name, uid, gid };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`config: SHELL_USER ${JSON.stringify(name)} is not a user on this machine (the shell runs commands as this user when the bot is root)`);
  }
}
