// The `shell` tool group (off by default): runs a bash command in the session workspace, inside
// a sandbox that cannot see the bot (shell-sandbox.ts), with an allowlisted environment. The
// spawned process gets its own process group and the sandbox its own PID namespace, so a timeout
// or cancellation kills everything the command started.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import { defineTool, type AnyTool } from '../core/tool.js';
import { abortReason } from './abort-reason.js';
import { resultBudgetChars } from '../core/output-cap.js';
import { overQuotaSince, removeCreatedEntries, snapshotWorkspace } from './shell-quota.js';
import { detectShellSandbox, handWorkspaceTo, invocationStdio, SANDBOX_PATH, SANDBOX_WORKSPACE, sandboxInvocation, sessionUser, writeFd3, type ProcessLimits, type SandboxInvocation, type ShellSandbox } from './shell-sandbox.js';
import { withoutServerPaths } from './workspace.js';
import { ensureSessionWorkspace, sessionWorkspacePath } from './workspace-path.js';
import type { WorkspaceDisks } from './workspace-disks.js';
import { DEFAULT_WORKSPACE_LIMITS, overQuotaNote, type WorkspaceLimits } from './workspace-quota.js';

/** Options of the shell tool group. */
export interface ShellToolsOptions {
  /** Directory holding one workspace per session (DATA_DIR/workspaces); commands run in theirs. */
  root: string;
  /** Default and largest time limit per command, in milliseconds (default 60,000). */
  timeoutMs?: number;
  /** Most characters kept of stdout and of stderr each (default 30,000). */
  maxOutputChars?: number;
  /** The process environment; commands get only the allowlisted variables of it. */
  env: Record<string, string | undefined>;
  /** Names of further variables passed to commands (SHELL_ENV_PASSTHROUGH). */
  envPassthrough?: readonly string[];
  /** The sandbox (detectShellSandbox); default: detected at the first call, never unsandboxed. */
  sandbox?: ShellSandbox | Promise<ShellSandbox>;
  /** Workspace limits: the largest file a command may write, and the quota held around it. */
  limits?: WorkspaceLimits;
  /** Process-count and memory limits of commands (default DEFAULT_PROCESS_LIMITS). */
  processLimits?: ProcessLimits;
  /** How often the workspace is measured while a command runs, in ms (default 250); not on a workspace disk. */
  quotaCheckMs?: number;
  /** Each workspace a filesystem of the quota's size, where the machine allows (workspace-disks.ts). */
  disks?: WorkspaceDisks;
}

/** Default time limit per command in milliseconds. */
export const DEFAULT_SHELL_TIMEOUT_MS = 60_000;

/** Default cap per output stream in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/**
 * Variables commands always get from the bot's environment when set (locale and terminal), by
 * name: a pattern such as LC_* would pass any variable an operator happened to name so.
 */
export const SHELL_ENV_ALLOWED: ReadonlySet<string> = new Set([
  'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_COLLATE', 'LC_MESSAGES', 'LC_NUMERIC', 'LC_MONETARY', 'LC_TIME',
  'LC_ADDRESS', 'LC_IDENTIFICATION', 'LC_MEASUREMENT', 'LC_NAME', 'LC_PAPER', 'LC_TELEPHONE', 'TERM', 'TZ',
]);

/**
 * The environment of a command: an allowlist, never the bot's environment minus a denylist (a
 * secret can have any name: OPENAI_BASE_URL with credentials, HTTPS_PROXY, SENTRY_DSN, …).
 * PATH and HOME are set for where the command runs; `passthrough` names more variables.
 */
export function shellEnvironment(env: Record<string, string | undefined>, home: string, path: string, passthrough: readonly string[] = []): Record<string, string> {
  const chosen: Record<string, string> = { PATH: path, HOME: home };
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (SHELL_ENV_ALLOWED.has(name) || passthrough.includes(name))) chosen[name] = value;
  }
  return chosen;
}

/** How a command ended. */
export type ShellEnding =
  | { kind: 'exit'; code: number }
  | { kind: 'signal'; signal: string }
  | { kind: 'timeout'; seconds: number }
  /** Killed because the workspace grew past its quota. */
  | { kind: 'quota' };

/** Builds the shell tool. */
export function shellTools(options: ShellToolsOptions): AnyTool[] {
  const limitMs = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const limits = options.limits ?? DEFAULT_WORKSPACE_LIMITS;
  // Detected once; a failed detection (no sandbox, SHELL_UNSANDBOXED unset) fails every call.
  let sandbox: Promise<ShellSandbox> | undefined;
  const sandboxOnce = (): Promise<ShellSandbox> => {
    sandbox ??= Promise.resolve(options.sandbox ?? detectShellSandbox({ root: options.root, allowUnsandboxed: false }));
    return sandbox;
  };
  const limitSeconds = Math.max(1, Math.floor(limitMs / 1000));

  const shell = defineTool({
    name: 'shell',
    untrustedOutput: true,
    description: `Run a bash command in the session workspace (the same directory the file tools use). stdin is closed; the command and everything it starts are killed after the time limit (${limitSeconds} s unless timeout_seconds is lower), and background processes stop when the command ends. Returns the exit code, stdout and stderr.`,
    input: z.object({
      command: z.string().min(1).describe('Bash command line, e.g. "ls -la && wc -l *.md"'),
      timeout_seconds: z.number().int().min(1).max(limitSeconds).optional().describe(`Time limit in seconds (default and maximum ${limitSeconds})`),
    }),
    // Our own timer fires first and reports what ran; this only backs it up.
    timeoutMs: limitMs + 5_000,
    async execute(input, context) {
      const chosen = await sandboxOnce();
      const workspace = await ensureSessionWorkspace(options.root, context.sessionId, options.disks);
      // On a disk of the quota's size the kernel refuses writes past it (ENOSPC): nothing to sample.
      const bounded = options.disks?.isBounded(sessionWorkspacePath(options.root, context.sessionId)) ?? false;
      // As root, each session's commands run as a user of their own: its processes count against its own limit.
      const user = sessionUser(chosen, context.sessionId);
      await handWorkspaceTo(chosen, workspace, limits.maxFiles * 2, user);
      const timeoutMs = Math.min(limitMs, (input.timeout_seconds ?? limitSeconds) * 1000);
      // Each stream gets its share; the whole result also stays within the context budget.
      const perStream = Math.min(maxOutputChars, Math.floor(resultBudgetChars(context.contextWindow) / 2));
      const sandboxed = chosen.kind !== 'none';
      const env = sandboxed
        ? shellEnvironment(options.env, SANDBOX_WORKSPACE, SANDBOX_PATH, options.envPassthrough)
        : shellEnvironment(options.env, workspace, options.env['PATH'] ?? SANDBOX_PATH, options.envPassthrough);
      const invocation = sandboxInvocation(chosen, { command: input.command, workspace, env, maxFileBytes: limits.maxBytes, ...(options.processLimits ? { processLimits: options.processLimits } : {}), ...(user ? { user } : {}) });
      const before = await snapshotWorkspace(workspace, limits);
      const overQuota = () => overQuotaSince(workspace, before, limits);
      const run = runCommand(invocation, { env, timeoutMs, maxChars: perStream, signal: context.signal, sandboxed, ...(bounded ? {} : { overQuota, quotaCheckMs: options.quotaCheckMs ?? 250 }) });
      // A cancelled command is held to the quota too, before the cancellation goes on.
      const result = await run.catch(async (error: unknown) => {
        if (await overQuota()) await removeCreatedEntries(workspace, before);
        throw error;
      });
      const notes: string[] = [];
      if (result.ending.kind === 'quota' || (await overQuota())) {
        const removed = await removeCreatedEntries(workspace, before);
        if (removed > 0) notes.push(`workspace quota: the command went over it, so what it created was removed (${removed} new ${removed === 1 ? 'entry' : 'entries'} of the workspace)`);
      }
      const full = bounded ? await options.disks?.fullNote(workspace) : undefined;
      if (full !== undefined) notes.push(full);
      const note = await overQuotaNote(workspace, limits);
      if (note !== undefined) notes.push(note);
      return [formatResult(result), ...notes].join('\n');
    },
  });
  // Its errors (a workspace that cannot be created, …) name no server path either.
  return [withoutServerPaths(shell as AnyTool, options.root)];
}

/** Settings of one runCommand call. */
export interface RunCommandOptions {
  env: Record<string, string>;
  /** Inside a sandbox, exit codes 129–192 are bash's way of saying "killed by signal". */
  sandboxed: boolean;
  timeoutMs: number;
  /** Most characters kept per stream (head and tail). */
  maxChars: number;
  signal: AbortSignal;
  /** Measures the workspace while the command runs: true kills it (quota). */
  overQuota?: () => Promise<boolean>;
  /** How often overQuota is asked, in ms. */
  quotaCheckMs?: number;
}

/** What a command produced. */
export interface CommandResult {
  ending: ShellEnding;
  stdout: string;
  stderr: string;
}

/** Runs `invocation` in its own process group; kills the group on timeout or abort. */
export function runCommand(invocation: SandboxInvocation, options: RunCommandOptions): Promise<CommandResult> {
  if (options.signal.aborted) return Promise.reject(new CancelledError(abortReason(options.signal)));
  return new Promise((resolve, reject) => {
    const child = spawn(invocation.file, invocation.args, {
      cwd: invocation.cwd,
      env: options.env,
      stdio: invocationStdio(invocation),
      // A new process group, so one kill reaches background jobs and grandchildren too (and,
      // sandboxed, the namespace's first process, whose death ends everything inside).
      detached: true,
    });
    writeFd3(child, invocation.fd3, invocation.moreFds);
    const stdout = new HeadTail(options.maxChars);
    const stderr = new HeadTail(options.maxChars);
    const stdoutDecoder = new StringDecoder('utf8');
    const stderrDecoder = new StringDecoder('utf8');
    child.stdout?.on('data', (chunk: Buffer) => stdout.append(stdoutDecoder.write(chunk)));
    child.stderr?.on('data', (chunk: Buffer) => stderr.append(stderrDecoder.write(chunk)));

    let timedOut = false;
    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    let overQuota = false;
    let measuring = false;
    const quotaTimer = options.overQuota
      ? setInterval(() => {
          if (measuring) return;
          measuring = true;
          void options.overQuota?.().then((over) => {
            if (over) {
              overQuota = true;
              killGroup();
            }
          }, () => undefined).finally(() => {
            measuring = false;
          });
        }, options.quotaCheckMs ?? 250)
      : undefined;
    const onAbort = (): void => killGroup();
    options.signal.addEventListener('abort', onAbort, { once: true });
    // When bash exits, leftover background jobs would keep the pipes (and this call) open and
    // outlive the command: they are stopped with it.
    child.once('exit', killGroup);

    child.once('error', (error) => {
      clearTimeout(timer);
      clearInterval(quotaTimer);
      options.signal.removeEventListener('abort', onAbort);
      reject(new ToolError(`could not start ${invocation.file}: ${error.message}`, { cause: error }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(quotaTimer);
      options.signal.removeEventListener('abort', onAbort);
      stdout.append(stdoutDecoder.end());
      stderr.append(stderrDecoder.end());
      if (options.signal.aborted) {
        reject(new CancelledError(abortReason(options.signal)));
        return;
      }
      const signalled = options.sandboxed && code !== null && code > 128 && code <= 192 ? signalName(code - 128) : undefined;
      const ending: ShellEnding = timedOut
        ? { kind: 'timeout', seconds: options.timeoutMs / 1000 }
        : overQuota
          ? { kind: 'quota' }
        : signal !== null
          ? { kind: 'signal', signal }
          : signalled !== undefined
            ? { kind: 'signal', signal: signalled }
            : { kind: 'exit', code: code ?? -1 };
      resolve({ ending, stdout: stdout.text('stdout'), stderr: stderr.text('stderr') });
    });
  });
}

function signalName(number: number): string | undefined {
  return Object.entries(constants.signals).find(([, value]) => value === number)?.[0];
}

/** Renders a command result for the model. */
export function formatResult(result: CommandResult): string {
  const ending = result.ending;
  const status =
    ending.kind === 'exit'
      ? `exit code: ${ending.code}`
      : ending.kind === 'signal'
        ? `killed by signal ${ending.signal}`
        : ending.kind === 'timeout'
          ? `killed after ${ending.seconds} s timeout (with every process it started)`
          : 'killed: the workspace grew past its quota (WORKSPACE_MAX_MB, WORKSPACE_MAX_FILES), with every process it started';
  const parts = [status];
  parts.push(result.stdout === '' ? 'stdout: (empty)' : `stdout:\n${result.stdout}`);
  if (result.stderr !== '') parts.push(`stderr:\n${result.stderr}`);
  return parts.join('\n');
}

/** Keeps the first and last `limit / 2` characters of a stream and counts what fell between. */
class HeadTail {
  private head = '';
  private tail = '';
  private total = 0;
  private readonly half: number;

  constructor(limit: number) {
    this.half = Math.max(1, Math.floor(limit / 2));
  }

  append(text: string): void {
    if (text === '') return;
    this.total += text.length;
    const room = this.half - this.head.length;
    if (room > 0) {
      this.head += text.slice(0, room);
      text = text.slice(room);
    }
    if (text !== '') this.tail = (this.tail + text).slice(-this.half);
  }

  text(name: string): string {
    const omitted = this.total - this.head.length - this.tail.length;
    if (omitted <= 0) return this.head + this.tail;
    return `${this.head}\n[… ${omitted} characters of ${name} omitted (${this.total} in total); showing the first and last ${this.half} …]\n${this.tail}`;
  }
}
