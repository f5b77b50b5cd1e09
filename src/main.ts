// `npm start`: the bot service. Loads config, opens storage (applying migrations), serves HTTP,
// starts the chat adapters whose credentials are set, and shuts down cleanly on SIGTERM/SIGINT.
import { createLogger, knownSecrets } from './log.js';
import { startService } from './service.js';
import { serviceProblems } from './config.js';
import { startupConfig } from './startup-config.js';

const { config, envFile } = startupConfig(process.argv, process.env, serviceProblems);
const log = createLogger(config.LOG_LEVEL, undefined, { secrets: knownSecrets(config) });
if (envFile) log.info({ path: envFile }, 'env-file-loaded');

// Signals are handled from the first moment: a SIGTERM during start-up (an orchestrator scaling
// down a replica that is still starting) stops the service once it is up, with exit code 0.
let service: Awaited<ReturnType<typeof startService>> | undefined;
let stopping = false;
const shutDown = (running: NonNullable<typeof service>) => {
  running.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      log.error({ err: error }, 'service-stop-failed');
      process.exit(1);
    },
  );
};
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'service-stopping');
  // Exit within 30 s whatever happens (orchestrators kill at their own deadline anyway).
  setTimeout(() => process.exit(1), 30_000).unref();
  if (service) shutDown(service);
};
// R18: a promise someone forgot to handle must not take every session down with it (Node 20
// exits on an unhandled rejection by default). It is a bug to fix, so it is logged as an error.
process.on('unhandledRejection', (reason) => log.error({ err: reason }, 'unhandled-rejection'));
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

try {
  service = await startService(config, log, { environment: process.env });
  if (stopping) shutDown(service);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
