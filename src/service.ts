// Wires the concrete parts of the bot service together (the only place that knows them all).
import { buildAgent, type BuiltAgent } from './build-agent.js';
import { configWarnings, missingModelSettings, metricsWarnings, spendWarnings, type Config } from './config.js';
import { createChatStorage, type ChatStorage } from './adapters/storage/chat-storage.js';
import { openDatabase, type Database } from './adapters/storage/database.js';
import type { ChatAdapter, ChatAdapterOptions } from './adapters/chat/chat-adapter.js';
import { HttpServer } from './http-server.js';
import type { Logger } from './log.js';
import { metricsHandler, type Metrics } from './metrics.js';

/** A running service. */
export interface Service {
  database: Database;
  /** The agent, when the model is configured. */
  agent?: BuiltAgent;
  /** The port the HTTP server listens on. */
  port: number;
  /** Stops taking work, lets running sessions reach a checkpoint, closes everything. */
  stop(): Promise<void>;
}

/** The chat adapters whose credentials are set. */
export function configuredAdapters(config: Config): string[] {
  const adapters: string[] = [];
  const slackCredentials = config.SLACK_BOT_TOKEN || config.SLACK_CLIENT_ID || config.SLACK_CLIENT_SECRET;
  if (slackCredentials && (config.SLACK_SIGNING_SECRET || config.SLACK_APP_TOKEN)) {
    adapters.push(config.SLACK_APP_TOKEN ? 'slack (socket mode)' : 'slack (events api)');
  }
  if (config.DISCORD_BOT_TOKEN) adapters.push('discord');
  return adapters;
}

export interface ServiceOptions {
  /** The process environment (the shell tool starts from it, minus secrets). */
  environment: Record<string, string | undefined>;
}

/** Starts the service: storage and migrations first, then the agent, HTTP, and adapters. */
export async function startService(config: Config, log: Logger, options: ServiceOptions = { environment: {} }): Promise<Service> {
  for (const warning of [...configWarnings(config, { service: true }), ...spendWarnings(config), ...metricsWarnings(config)]) log.warn(`config-warning: ${warning}`);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
  log.info({ storage: database.kind, migrationsApplied: database.appliedMigrations.length }, 'storage-ready');
  const http = new HttpServer(log);
  http.addReadinessCheck({ name: 'database', check: async () => (await database.ping(), true) });

  let agent: BuiltAgent | undefined;
  let metricsHttp: HttpServer | undefined;
  const missingModel = missingModelSettings(config);
  if (missingModel.length === 0) {
    agent = await buildAgent({ config, database, log, environment: options.environment });
    // An ingest process drives nothing: no wake-ups to act on, no sessions to take over.
    if (config.HIPPO_ROLE !== 'ingest') agent.agent.runners.startSweeping();
    // Looked at in the background: start-up never waits for (or fails on) the model. Only a refused
    // key makes the service unready (it cannot answer anyone until the key is fixed, and a rolling
    // deploy with a wrong key stops at its first replica); an unreachable or slow endpoint does
    // not, because inbound messages are still stored and answered once the model is back.
    const health = agent.modelHealth;
    health.start();
    http.addReadinessCheck({ name: 'model', check: async () => ({ ready: health.status !== 'unauthorized', status: health.status }) });
    // On its own port (kept off the internet-facing one) or on PORT; behind a token when one is set.
    const metricsRoute = metricsHandler(agent.metrics.registry, config.METRICS_TOKEN);
    if (config.METRICS_PORT === undefined) http.route('GET', '/metrics', metricsRoute);
    else {
      metricsHttp = new HttpServer(log, { probes: false });
      metricsHttp.route('GET', '/metrics', metricsRoute);
    }
  } else {
    log.warn(`agent-disabled: ${missingModel.map((line) => line.replace(/^config: /, '')).join('; ')}; the agent answers no messages`);
  }

  const adapters = configuredAdapters(config);
  const running: ChatAdapter[] = [];
  if (adapters.length && !agent) log.warn({ adapters }, 'adapters-not-started: the agent is disabled');
  if (agent) {
    const shared: ChatAdapterOptions = {
      config, agent: agent.agent, stores: agent.stores, storage: countedStorage(createChatStorage(database.prisma, database.pool), agent.metrics), log,
      onFeedback: agent.metrics.answerFeedback, attachments: agent.attachments, serve: config.HIPPO_ROLE !== 'worker',
    };
    try {
      // Loaded only when configured (they are heavy). Slack is mounted before listening, so
      // /slack/events never answers 404 while starting.
      if (adapters.some((name) => name.startsWith('slack'))) {
        const { startSlackAdapter } = await import('./adapters/slack/index.js');
        running.push(await startSlackAdapter({ ...shared, http }));
      }
      if (adapters.includes('discord')) {
        const { startDiscordAdapter } = await import('./adapters/discord/index.js');
        running.push(await startDiscordAdapter(shared));
      }
    } catch (error) {
      await abandon(running, agent, database);
      throw error;
    }
    for (const adapter of running) {
      http.addReadinessCheck({ name: adapter.platform, check: async () => adapter.connected() });
    }
  }

  const port = await http.listen(config.PORT).catch(async (error: unknown) => {
    await abandon(running, agent, database);
    throw error;
  });
  if (metricsHttp && config.METRICS_PORT !== undefined) {
    const metricsPort = await metricsHttp.listen(config.METRICS_PORT, { host: config.METRICS_HOST, setting: 'METRICS_PORT' }).catch(async (error: unknown) => {
      await http.close();
      await abandon(running, agent, database);
      throw error;
    });
    log.info({ port: metricsPort, host: config.METRICS_HOST, token: config.METRICS_TOKEN !== undefined }, 'metrics-listening');
  }
  log.info({ port, adapters, role: config.HIPPO_ROLE }, adapters.length ? 'service-started' : 'service-started without chat adapters');
  // Sessions left with backlog by a crash or restart continue without a new message (R12); in the
  // background, so a database that went away just now delays recovery, not the service.
  let stopping = false;
  if (agent && config.HIPPO_ROLE !== 'ingest') {
    void agent.agent.recover().catch((error: unknown) => {
      if (!stopping) log.error({ err: String(error) }, 'session-recovery-failed');
    });
  }
  return {
    database,
    ...(agent ? { agent } : {}),
    port,
    stop: async () => {
      stopping = true;
      // Stop taking work, let sessions reach a checkpoint (leases released), then flush the outbox.
      await http.close();
      await metricsHttp?.close();
      await agent?.agent.stop(20_000);
      for (const adapter of running) await adapter.stop().catch((error: unknown) => log.warn({ adapter: adapter.platform, err: String(error) }, 'adapter-stop-failed'));
      await agent?.close();
      await database.close();
      log.info('service-stopped');
    },
  };
}

/** Closes what a start-up that failed half way had opened. */
async function abandon(running: readonly ChatAdapter[], agent: BuiltAgent | undefined, database: Database): Promise<void> {
  for (const adapter of running) await adapter.stop().catch(() => undefined);
  await agent?.agent.stop(1_000);
  await agent?.close();
  await database.close();
}

/** The chat adapters' storage with its outbox counted in /metrics. */
function countedStorage(storage: ChatStorage, metrics: Metrics): ChatStorage {
  return { ...storage, outbox: metrics.instrumentOutbox(storage.outbox) };
}
