// Starts Hippo entry points as child processes and reads their JSON log lines.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tsxLoader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

export interface RunningProcess {
  child: ChildProcess;
  /** Every stdout line so far. */
  lines: string[];
  stderr: () => string;
  /** Resolves with the first JSON log line whose msg matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/** Where and how startScript runs the script. */
export interface ScriptOptions {
  /** Working directory (default: the repository root); the script path stays relative to the root. */
  cwd?: string;
  /** Let the script read `.env` from its working directory (default false: a developer's .env must not leak into tests). */
  envFile?: boolean;
  /** Options for node itself, before the script (e.g. productionNodeOptions()). */
  nodeOptions?: string[];
  /** The node binary (default: the one running the tests). */
  node?: string;
  /**
   * A copy of the repository to run from, with its own node_modules (see production-copy.ts): the
   * script and `--import tsx` resolve there, exactly as the image's CMD does. Also the working directory.
   */
  root?: string;
}

/** The node options of `npm start` (package.json), e.g. its heap limit. */
export function productionNodeOptions(): string[] {
  const start = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? '';
  return start.split(/\s+/).filter((word) => /^--max-old-space-size=\d+$/.test(word));
}

/**
 * The children still running: SIGKILLed after the test file that started them, so a failed test
 * leaves none behind (the test process may end without an 'exit' event, and children outlive it).
 */
const children = new Set<ChildProcess>();
// Benchmarks and the long chaos run use these helpers outside Vitest, where there are no hooks.
if (process.env['VITEST']) {
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
  });
}

/** Runs `tsx <script>` with only the given environment (plus PATH/HOME). */
export function startScript(script: string, env: Record<string, string>, args: string[] = [], options: ScriptOptions = {}): RunningProcess {
  // tsx by its file URL: `--import tsx` would be resolved from the working directory.
  const entry = options.root ? ['--import', 'tsx', script] : ['--import', tsxLoader, join(repoRoot, script)];
  const child = spawn(options.node ?? process.execPath, [...(options.nodeOptions ?? []), ...entry, ...args, ...(options.envFile ? [] : ['--no-env-file'])], {
    cwd: options.cwd ?? options.root ?? repoRoot,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/tmp', LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  const lines: string[] = [];
  let stderr = '';
  let buffer = '';
  const waiters: Array<() => void> = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      for (const wake of waiters.splice(0)) wake();
      resolve({ code, signal });
    }),
  );
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    kill: (signal = 'SIGTERM') => void child.kill(signal),
    waitForLog: (pattern, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no log matching ${pattern} within ${timeoutMs} ms; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          for (const line of lines) {
            try {
              const record = JSON.parse(line) as Record<string, unknown>;
              if (typeof record['msg'] === 'string' && pattern.test(record['msg'])) {
                clearTimeout(timer);
                resolve(record);
                return;
              }
            } catch {
              // not a JSON line
            }
          }
          if (child.exitCode !== null) {
            clearTimeout(timer);
            reject(new Error(`process exited (${child.exitCode}) before logging ${pattern}; stderr:\n${stderr}\nstdout:\n${lines.join('\n')}`));
            return;
          }
          waiters.push(check);
        };
        check();
      }),
  };
}
