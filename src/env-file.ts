// `.env` in the working directory is read at start-up when present, so `cp .env.example .env`
// is all a first run needs. Variables already in the environment win over the file (a process
// manager's or the shell's settings are never overridden); `--no-env-file` skips it.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** The file loaded (absolute path), or undefined when there was none or it was skipped. */
export function loadEnvFile(argv: readonly string[], file = '.env'): string | undefined {
  if (argv.includes('--no-env-file')) return undefined;
  const path = resolve(file);
  if (!existsSync(path)) return undefined;
  try {
    process.loadEnvFile(path);
  } catch (error) {
    throw new Error(`config: ${path} could not be read (${error instanceof Error ? error.message : String(error)}); fix it or start with --no-env-file`);
  }
  return path;
}
