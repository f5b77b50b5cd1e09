// `.env` in the working directory is read at start-up when present, so `cp .env.example .env`
// is all a first run needs. The environment wins over the file: a variable set there (a process
// manager's, the shell's) is never overridden; one set to the empty string counts as unset, as
// everywhere in the configuration. `--no-env-file` skips the file.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Fills `environment` from the file and returns its absolute path, or undefined when there was
 * none or it was skipped. Throws an Error with one line naming the file when it cannot be read.
 */
export function loadEnvFile(argv: readonly string[], environment: Record<string, string | undefined>, file = '.env'): string | undefined {
  if (argv.includes('--no-env-file')) return undefined;
  const path = resolve(file);
  if (!existsSync(path)) return undefined;
  let values: Record<string, string>;
  try {
    // Node's own parser, the one behind `node --env-file` and process.loadEnvFile.
    values = parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
  } catch (error) {
    throw new Error(`config: ${path} could not be read (${error instanceof Error ? error.message : String(error)}); fix it or start with --no-env-file`);
  }
  for (const [name, value] of Object.entries(values)) {
    if (environment[name] === undefined || environment[name] === '') environment[name] = value;
  }
  return path;
}
