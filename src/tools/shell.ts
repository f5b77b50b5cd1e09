// The `shell` tool group (off by default): runs a bash command in the session workspace. The
// command gets its own process group so a timeout or cancellation kills everything it started,
// and an environment without the bot's secrets.
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import { defineTool, type AnyTool } from '../core/tool.js';
import { abortReason } from './abort-reason.js';
import { resultBudgetChars } from '../core/output-cap.js';
import { ensureSessionWorkspace } from './workspace-path.js';

/** Options of the shell tool group. */
export interface ShellToolsOptions {
  /** Directory holding one workspace per session (DATA_DIR/workspaces); commands run in theirs. */
  root: string;
  /** Default and largest time limit per command, in milliseconds (default 60,000). */
  timeoutMs?: number;
  /** Most characters kept of stdout and of stderr each (default 30,000). */
  maxOutputChars?: number;
  /** The process environment; a copy without secrets is given to commands. */
  env: Record<string, string | undefined>;
}

/** Default time limit per command in milliseconds. */
export const DEFAULT_SHELL_TIMEOUT_MS = 60_000;

/** Default cap per output stream in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 30_000;

/** Environment variable names treated as secrets and never passed to commands. */
export const SECRET_NAME = /TOKEN|SECRET|KEY|PASSWORD|DATABASE_URL|CREDENTIAL/i;

/** Copy of `env` without unset values and without variables whose name looks like a secret. */
export function sanitizeEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !SECRET_NAME.test(name)) clean[name] = value;
  }
  return clean;
}

/** How a command ended. */
export type ShellEnding =
  | { kind: 'exit'; code: number }
  | { kind: 'signal'; signal: string }
  | { kind: 'timeout'; seconds: number };

/** Builds the shell tool. */
export function shellTools(options: ShellToolsOptions): AnyTool[] {
  const limitMs = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const environment = sanitizeEnvironment(options.env);
  const limitSeconds = Math.max(1, Math.floor(limitMs / 1000));

  const shell = defineTool({
    name: 'shell',
    description: `Run a bash command in the session workspace (the same directory the file tools use). stdin is closed; the command and everything it starts are killed after the time limit (${limitSeconds} s unless timeout_seconds is lower), and background processes stop when the command ends. Returns the exit code, stdout and stderr.`,
    input: z.object({
      command: z.string().min(1).describe('Bash command line, e.g. "ls -la && wc -l *.md"'),
      timeout_seconds: z.number().int().min(1).max(limitSeconds).optional().describe(`Time limit in seconds (default and maximum ${limitSeconds})`),
    }),
    // Our own timer fires first and reports what ran; this only backs it up.
    timeoutMs: limitMs + 5_000,
    async execute(input, context) {
      const cwd = await ensureSessionWorkspace(options.root, context.sessionId);
      const timeoutMs = Math.min(limitMs, (input.timeout_seconds ?? limitSeconds) * 1000);
      // Each stream gets its share; the whole result also stays within the context budget.
      const perStream = Math.min(maxOutputChars, Math.floor(resultBudgetChars(context.contextWindow) / 2));
      const result = await runCommand(input.command, { cwd, env: environment, timeoutMs, maxChars: perStream, signal: context.signal });
      return formatResult(result);
    },
  });
  return [shell];
}

/** Settings of one runCommand call. */
export interface RunCommandOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Most characters kept per stream (head and tail). */
  maxChars: number;
  signal: AbortSignal;
}

/** What a command produced. */
export interface CommandResult {
  ending: ShellEnding;
  stdout: string;
  stderr: string;
}

/** Runs `bash -lc command` in its own process group; kills the group on timeout or abort. */
export function runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
  if (options.signal.aborted) return Promise.reject(new CancelledError(abortReason(options.signal)));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-lc', command], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A new process group, so one kill reaches background jobs and grandchildren too.
      detached: true,
    });
    const stdout = new HeadTail(options.maxChars);
    const stderr = new HeadTail(options.maxChars);
    const stdoutDecoder = new StringDecoder('utf8');
    const stderrDecoder = new StringDecoder('utf8');
    child.stdout.on('data', (chunk: Buffer) => stdout.append(stdoutDecoder.write(chunk)));
    child.stderr.on('data', (chunk: Buffer) => stderr.append(stderrDecoder.write(chunk)));

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
    const onAbort = (): void => killGroup();
    options.signal.addEventListener('abort', onAbort, { once: true });
    // When bash exits, leftover background jobs would keep the pipes (and this call) open and
    // outlive the command: they are stopped with it.
    child.once('exit', killGroup);

    child.once('error', (error) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      reject(new ToolError(`could not start bash: ${error.message}`, { cause: error }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      stdout.append(stdoutDecoder.end());
      stderr.append(stderrDecoder.end());
      if (options.signal.aborted) {
        reject(new CancelledError(abortReason(options.signal)));
        return;
      }
      const ending: ShellEnding = timedOut
        ? { kind: 'timeout', seconds: options.timeoutMs / 1000 }
        : signal !== null
          ? { kind: 'signal', signal }
          : { kind: 'exit', code: code ?? -1 };
      resolve({ ending, stdout: stdout.text('stdout'), stderr: stderr.text('stderr') });
    });
  });
}

/** Renders a command result for the model. */
export function formatResult(result: CommandResult): string {
  const ending = result.ending;
  const status =
    ending.kind === 'exit'
      ? `exit code: ${ending.code}`
      : ending.kind === 'signal'
        ? `killed by signal ${ending.signal}`
        : `killed after ${ending.seconds} s timeout (with every process it started)`;
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
