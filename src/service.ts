// Wires the concrete parts of the bot service together (the only place that knows them all).
import type { Config } from './config.js';
import { openDatabase, type Database } from './adapters/storage/database.js';
import { HttpServer } from './http-server.js';
import type { Logger } from './log.js';

/** A running service. */
export interface Service {
  database: Database;
  /** The port the HTTP server listens on. */
  port: number;
  /** Stops taking work, finishes what runs, closes everything. */
  stop(): Promise<void>;
}

/** The chat adapters whose credentials are set. */
export function configuredAdapters(config: Config): string[] {
  const adapters: string[] = [];
  if (config.SLACK_BOT_TOKEN && (config.SLACK_SIGNING_SECRET || config.SLACK_APP_TOKEN)) {
    adapters.push(config.SLACK_APP_TOKEN ? 'slack (socket mode)' : 'slack (events api)');
  }
  if (config.DISCORD_BOT_TOKEN) adapters.push('discord');
  return adapters;
}

/** Starts the service: storage and migrations first, then HTTP, then adapters. */
export async function startService(config: Config, log: Logger): Promise<Service> {
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
  log.info(
    { storage: database.kind, migrationsApplied: database.appliedMigrations.length },
    'storage-ready',
  );
  const http = new HttpServer(log);
  http.addReadinessCheck({ name: 'database', check: async () => (await database.ping(), true) });
  const port = await http.listen(config.PORT);
  const adapters = configuredAdapters(config);
  log.info({ port, adapters }, adapters.length ? 'service-started' : 'service-started without chat adapters');
  return {
    database,
    port,
    stop: async () => {
      await http.close();
      await database.close();
      log.info('service-stopped');
    },
  };
}
