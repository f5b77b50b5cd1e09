// The Slack adapter: people's messages in, agent events out (docs/product.md "Using it").
// Wiring only; each part lives in its own file.
import type { Config } from '../../config.js';
import type { Agent } from '../../core/agent.js';
import type { Stores } from '../../core/store.js';
import type { HttpServer } from '../../http-server.js';
import type { Logger } from '../../log.js';
import { AccessPolicy, accessLists, RefusalNotices } from '../chat/access-policy.js';
import { allowedWorkspacesGate } from './allowed-workspaces.js';
import type { FeedbackListener } from '../chat/answer-feedback.js';
import { Background } from '../chat/background.js';
import { memoryGate, parseMemoryEditors } from '../chat/memory-access.js';
import { Outbox } from '../chat/outbox.js';
import type { SenderOptions } from '../chat/outbox-sender.js';
import type { ChatStorage } from '../storage/chat-storage.js';
import { registerAssistantPane } from './assistant-pane.js';
import { SlackDelivery } from './deliver.js';
import { handleAppHomeOpened } from './app-home.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import { slackFileFetcher } from './files.js';
import { handleMessageEvent } from './inbound.js';
import { registerInteractions } from './interactions.js';
import { registerMembershipEvents } from './membership-events.js';
import { eventEnvelope } from './payloads.js';
import { SlackPeople } from './people.js';
import { registerReactions } from './reactions.js';
import { SlackRenderer } from './renderer.js';
import { SlackAccess } from './memory-access.js';
import { connectSlack, SlackRetryableError } from './app.js';
import { slackPlatform, type SlackContext } from './context.js';
import { registerSlashCommand } from './slash-command.js';
import { registerUninstall } from './uninstall.js';
import { SlackRoutes } from './routes.js';
import { WorkspaceNotInstalledError, type InstalledWorkspacesOptions } from './workspaces.js';
import { optionalTargetStreamOperations } from './stream-delivery.js';

/** What startSlackAdapter needs; the last two are for tests and tuning. */
export interface SlackAdapterOptions {
  config: Config;
  agent: Agent;
  stores: Stores;
  /** The outbox and feedback tables. */
  storage: ChatStorage;
  http: HttpServer;
  log: Logger;
  /** Web API retries of network and 5xx failures (default 2). */
  webApiRetries?: number;
  /** Outbox sender tuning (poll interval, backoff, …). */
  outbox?: SenderOptions;
  /** Installation cache and token refresh timing (many-workspace mode). */
  workspaces?: InstalledWorkspacesOptions;
  /** Hears each new 👍 / 👎 on an answer (the metrics counter). */
  onFeedback?: FeedbackListener;
  /** Where shared files are saved and attached files read (absent: files are only named). */
  attachments?: WorkspaceAttachments;
  /** False in a worker process (HIPPO_ROLE=worker): renders and sends, receives nothing. */
  serve?: boolean;
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
    config: options.config, http: options.http, log, slack: options.storage.slack,
    ...(options.webApiRetries !== undefined ? { webApiRetries: options.webApiRetries } : {}),
    ...(options.workspaces ? { workspaces: options.workspaces } : {}),
    ...(options.serve === false ? { serve: false } : {}),
  });
  const { workspaces } = connection;
  const outbox = new Outbox(options.storage.outbox, log);
  const people = new SlackPeople(workspaces, log);
  const access = new SlackAccess(workspaces, log);
  const context: SlackContext = {
    agent: options.agent,
    stores: options.stores,
    feedback: options.storage.feedback,
    outbox,
    workspaces,
    people,
    access: new AccessPolicy(accessLists(options.config)),
    refusals: new RefusalNotices(),
    background: new Background(log),
    memory: memoryGate(access, parseMemoryEditors(options.config.MEMORY_EDITORS, options.config.ADMIN_USERS)),
    log,
  };
  const teamOfSession = async (sessionId: string) => (await options.stores.sessions.get(sessionId))?.workspaceId ?? null;
  options.attachments?.register('slack', slackFileFetcher(workspaces, options.config.SLACK_API_URL));
  const delivery = new SlackDelivery(workspaces, teamOfSession, log, options.attachments, options.config.LINK_PREVIEWS === 'on');
  const renderer = new SlackRenderer(context, delivery, Date.now, 1_000, options.config.SLACK_TASK_DISPLAY);
  const unsubscribe = options.agent.deps.events.subscribe(renderer.listener);
  // A final answer with no stream to replace is posted; a stream's end with none is nothing to do.
  const sender = outbox.startSender(slackPlatform, delivery.deliver, { ...options.outbox, optionalTargetOperations: optionalTargetStreamOperations });

  const { app } = connection;
  // First: a request of a team outside ALLOWED_WORKSPACES reaches no listener.
  app.use(allowedWorkspacesGate((teamId) => context.access.servesWorkspace(teamId), log));
  const onMessage = async ({ event, body, context: bolt }: { event: unknown; body: unknown; context: { retryNum?: number } }) => {
    const envelope = eventEnvelope.safeParse(body);
    if (!envelope.success) return log.warn('slack-event-without-team: ignored');
    await handleMessageEvent(context, { teamId: envelope.data.team_id, eventId: envelope.data.event_id, retryNum: bolt.retryNum }, event);
  };
  const routes = new SlackRoutes();
  routes.event('app_mention', onMessage);
  routes.event('message', onMessage);
  routes.event('app_home_opened', async ({ event, body }) => {
    const envelope = eventEnvelope.safeParse(body);
    if (envelope.success) handleAppHomeOpened(context, envelope.data.team_id, event);
  });
  registerInteractions(app, routes, context, options.onFeedback ?? (() => undefined));
  registerSlashCommand(app, context);
  registerUninstall(routes, context, connection.installations);
  registerAssistantPane(routes, context);
  registerReactions(routes, context, options.onFeedback ?? (() => undefined));
  registerMembershipEvents(routes, { people, access });
  routes.mount(app);
  app.error(async (error) => {
    // An event of a workspace without an installation (uninstalled, or never installed): Bolt
    // could not authorize it. Acknowledged, so Slack does not retry; nothing runs.
    const cause = (error as { original?: unknown }).original ?? error;
    if (cause instanceof WorkspaceNotInstalledError) return void log.info({ teamId: cause.teamId }, 'slack-event-ignored: workspace not installed');
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
