// The Slack adapter: people's messages in, agent events out (docs/product.md "Using it").
// Wiring only; each part lives in its own file.
import type { HttpServer } from '../../http-server.js';
import { AccessPolicy, accessLists, RefusalNotices } from '../chat/access-policy.js';
import { allowedWorkspacesGate } from './workspaces/allowed-workspaces.js';
import { Background } from '../chat/background.js';
import { memoryGate, parseMemoryEditors } from '../chat/memory-access.js';
import { Outbox } from '../chat/outbox.js';
import type { SenderOptions } from '../chat/outbox-sender.js';
import { registerAssistantPane } from './assistant-pane.js';
import { SlackDelivery } from './deliver.js';
import { handleAppHomeOpened } from './app-home/app-home.js';
import { slackFileFetcher } from './files.js';
import { SlackInbound } from './inbound.js';
import { SlackInteractions } from './interactions.js';
import { registerMembershipEvents } from './membership-events.js';
import { eventEnvelope } from './payloads.js';
import { registerRoles, type ChatAdapter, type ChatAdapterOptions, type ChatRoles } from '../chat/chat-adapter.js';
import { SlackPeople } from './people.js';
import { SlackReactions } from './reactions.js';
import { SlackRenderer } from './renderer.js';
import { SlackAccess } from './memory-access.js';
import { connectSlack, SlackRetryableError } from './app.js';
import { slackPlatform, type SlackContext } from './context.js';
import { registerSlashCommand } from './slash-command.js';
import { registerUninstall } from './workspaces/uninstall.js';
import { SlackRoutes, type SlackListeners } from './routes.js';
import { WorkspaceNotInstalledError, type InstalledWorkspacesOptions } from './workspaces/workspaces.js';
import { optionalTargetStreamOperations } from './stream-delivery.js';

/** What startSlackAdapter needs beyond what every adapter gets; the rest are for tests and tuning. */
export interface SlackAdapterOptions extends ChatAdapterOptions {
  http: HttpServer;
  /** Web API retries of network and 5xx failures (default 2). */
  webApiRetries?: number;
  /** Outbox sender tuning (poll interval, backoff, …). */
  outbox?: SenderOptions;
  /** Installation cache and token refresh timing (many-workspace mode). */
  workspaces?: InstalledWorkspacesOptions;
}

/**
 * A running Slack adapter: `stop` stops receiving, writes pending card edits to the outbox, and
 * stops the sender; `connected` is true while Slack can reach us (HTTP mode: after start; Socket
 * Mode: while the socket is up).
 */
export type SlackAdapter = ChatAdapter;

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
  const onFeedback = options.onFeedback ?? (() => undefined);
  const delivery = new SlackDelivery(workspaces, teamOfSession, log, options.attachments, options.config.LINK_PREVIEWS === 'on');
  const renderer = new SlackRenderer(context, delivery, Date.now, 1_000, options.config.SLACK_TASK_DISPLAY);
  const roles = {
    inbound: new SlackInbound(context),
    interactions: new SlackInteractions(context, onFeedback),
    reactions: new SlackReactions(context, onFeedback),
    renderer,
    delivery,
  } satisfies ChatRoles<SlackListeners>;
  const unsubscribe = options.agent.deps.events.subscribe((event) => renderer.handle(event));
  // A final answer with no stream to replace is posted; a stream's end with none is nothing to do.
  const sender = outbox.startSender(slackPlatform, delivery.deliver, { ...options.outbox, optionalTargetOperations: optionalTargetStreamOperations });

  const { app } = connection;
  // First: a request of a team outside ALLOWED_WORKSPACES reaches no listener.
  app.use(allowedWorkspacesGate((teamId) => context.access.servesWorkspace(teamId), log));
  const routes = new SlackRoutes();
  registerRoles(roles, { app, routes });
  routes.event('app_home_opened', async ({ event, body }) => {
    const envelope = eventEnvelope.safeParse(body);
    if (envelope.success) handleAppHomeOpened(context, envelope.data.team_id, event);
  });
  registerSlashCommand(app, context);
  registerUninstall(routes, context, connection.installations);
  registerAssistantPane(routes, context);
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
    platform: slackPlatform,
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
