// What both entry points (`npm start`, `npm run chat`) do first: read `.env` when present, then
// the configuration. Anything wrong ends the process with one line per problem on stderr.
import { parseConfig, type Config } from './config.js';
import { loadEnvFile } from './env-file.js';

/**
 * The parsed configuration and the `.env` file it was read from (if any); the entry point passes
 * its process's arguments and environment. `moreProblems` adds the entry point's own requirements
 * (the terminal chat needs a model).
 */
export function startupConfig(
  argv: readonly string[],
  environment: Record<string, string | undefined>,
  moreProblems: (config: Config) => string[] = () => [],
): { config: Config; envFile: string | undefined } {
  let envFile: string | undefined;
  try {
    envFile = loadEnvFile(argv, environment);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
  const parsed = parseConfig(environment);
  const problems = parsed.ok ? moreProblems(parsed.config) : parsed.errors;
  if (!parsed.ok || problems.length > 0) {
    for (const line of problems) process.stderr.write(`${line}\n`);
    process.exit(1);
  }
  return { config: parsed.config, envFile };
}
