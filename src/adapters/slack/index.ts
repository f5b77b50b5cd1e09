// The Slack adapter: people's messages in, agent events out (product.md "How people use it").
// Wiring only; each part lives in its own file.
import type { Config } from '../../config.js';
import type { Agent } from '../../core/agent.js';
import type { Stores } from '../../core/store.js';
import type { HttpServer } from '../../http-server.js';
import type { Logger } from '../../log.js';
import { Background } from '../chat/background.js';
import { Outbox } from '../chat/outbox.js';
import type { SenderOptions } from '../chat/outbox-sender.js';
import type { PrismaClient } from '../storage/generated/client.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import { SlackDelivery } from './deliver.js';
import { slackFileFetcher } from './files.js';
import { handleMessageEvent } from './inbound.js';
import { registerInteractions } from './interactions.js';
import { eventEnvelope } from './payloads.js';
import { SlackPeople } from './people.js';
import { SlackRenderer } from './renderer.js';
import { connectSlack, SlackRetryableError } from './slack-app.js';
import { slackPlatform, type SlackContext } from './slack-context.js';
import { registerSlashCommand } from './slash-command.js';
import { streamOperations } from './stream-delivery.js';

/** What startSlackAdapter needs; the last two are for tests and tuning. */
export interface SlackAdapterOptions {
  config: Config;
  agent: Agent;
  stores: Stores;
  prisma: PrismaClient;
  http: HttpServer;
  log: Logger;
  /** Web API retries of network and 5xx failures (default 2). */
  webApiRetries?: number;
  /** Outbox sender tuning (poll interval, backoff, …). */
  outbox?: SenderOptions;
  /** Where shared files are saved and attached files read (absent: files are only named). */
  attachments?: WorkspaceAttachments;
}

/** A running Slack adapter. */
export interface SlackAdapter {
  /** Stops receiving, writes pending card edits to the outbox, and stops the sender. */
  stop(): Promise<void>;
  /** True while Slack can reach us (HTTP mode: after start; Socket Mode: while the socket is up). */
  connected(): boolean;
}

/** Connects to Slack, renders the agent's events there, and starts the outbox sender. */
export async function startSlackAdapter(options: SlackAdapterOptions): Promise<SlackAdapter> {
  const log = options.log.child({ adapter: 'slack' });
  const connection = await connectSlack({
    config: options.config, http: options.http, log, ...(options.webApiRetries !== undefined ? { webApiRetries: options.webApiRetries } : {}),
  });
  const outbox = new Outbox(options.prisma, log);
  const context: SlackContext = {
    agent: options.agent,
    stores: options.stores,
    prisma: options.prisma,
    outbox,
    client: connection.client,
    identity: connection.identity,
    people: new SlackPeople(connection.client, log),
    background: new Background(log),
    log,
  };
  const token = options.config.SLACK_BOT_TOKEN;
  if (options.attachments && token) options.attachments.register('slack', slackFileFetcher(connection.client, token, options.config.SLACK_API_URL));
  const delivery = new SlackDelivery(connection.client, log, options.attachments);
  const renderer = new SlackRenderer(context, delivery);
  const unsubscribe = options.agent.deps.events.subscribe(renderer.listener);
  // A final answer with no stream to replace is posted; a stream's end with none is nothing to do.
  const sender = outbox.startSender(slackPlatform, delivery.deliver, { ...options.outbox, optionalTargetOperations: [streamOperations.finish, streamOperations.close] });

  const { app } = connection;
  const onMessage = async ({ event, body, context: bolt }: { event: unknown; body: unknown; context: { retryNum?: number } }) => {
    const envelope = eventEnvelope.safeParse(body);
    if (!envelope.success) return log.warn('slack-event-without-team: ignored');
    await handleMessageEvent(context, { teamId: envelope.data.team_id, eventId: envelope.data.event_id, retryNum: bolt.retryNum }, event);
  };
  app.event('app_mention', onMessage);
  app.event('message', onMessage);
  registerInteractions(app, context);
  registerSlashCommand(app, context);
  app.error(async (error) => {
    log.error({ err: error }, 'slack-handler-failed');
    // Rethrown so the HTTP answer is a 500 and Slack retries; nothing was marked processed.
    throw new SlackRetryableError(error.message, { cause: error });
  });
  await connection.start();
  log.info({ mode: connection.mode }, 'slack-adapter-started');

  return {
    connected: () => connection.connected(),
    stop: async () => {
      await connection.stop();
      await context.background.settle();
      await renderer.settle();
      unsubscribe();
      await sender.stop();
      log.info('slack-adapter-stopped');
    },
  };
}
