// The Discord adapter: connects to the gateway, registers `/hippo`, turns messages and clicks into
// agent calls, and renders agent events through the durable outbox. Wired in by src/service.ts.
import { Events, Routes, Status, type Client } from 'discord.js';
import { ConfigError } from '../../core/errors.js';
import { todoDocumentPath } from '../../core/memory-store.js';
import type { Logger } from '../../log.js';
import { memoryGate, parseMemoryEditors } from '../chat/memory-access.js';
import { AccessPolicy, accessLists } from '../chat/access-policy.js';
import { Outbox } from '../chat/outbox.js';
import type { SenderOptions } from '../chat/outbox-sender.js';
import { DiscordReactions } from './reactions.js';
import { discordFileFetcher } from './files.js';
import { connectDiscord, createDiscordClient } from './client.js';
import { DiscordAccess } from './memory-access.js';
import { servedHere, type DiscordContext } from './context.js';
import { DiscordDelivery, optionalTargetOperations } from './deliver.js';
import { registerRoles, type ChatAdapter, type ChatAdapterOptions, type ChatRoles } from '../chat/chat-adapter.js';
import { DiscordRenderer } from './renderer.js';
import { DiscordInteractions } from './interactions.js';
import { inviteUrl } from './invite.js';
import { DiscordInbound } from './inbound.js';
import { parseGuildIds, registerSlashCommands } from './slash-command.js';
import { TypingIndicator } from './typing-indicator.js';

export { disallowedIntentsMessage, invalidTokenMessage } from './client.js';
export { invitePermissions, inviteUrl } from './invite.js';

/**
 * What the adapter needs beyond what every adapter gets; `tuning` is for tests. `serve: false` (a
 * worker process): no gateway connection (an ingest process holds it); the agent's events are still
 * rendered and sent through the REST API.
 */
export interface DiscordAdapterOptions extends ChatAdapterOptions {
  tuning?: {
    /** Typing indicator renewal, ms (default 8,000). */
    typingIntervalMs?: number;
    /** Outbox sender tunables (defaults: see SenderOptions). */
    sender?: SenderOptions;
    /** Give up connecting after this long, ms (default 90,000). */
    connectTimeoutMs?: number;
  };
}

/**
 * A running Discord adapter: `stop` stops taking events, drains what was received, disconnects;
 * `connected` is true while the gateway connection is up.
 */
export interface DiscordAdapter extends ChatAdapter {
  /** Resolves when everything received so far is handled and its outbox items are stored (tests). */
  idle(): Promise<void>;
  /** The underlying client (tests, diagnostics). */
  readonly client: Client;
}

/** Connects to Discord; rejects with a ConfigError (one line for the operator) when Discord refuses. */
export async function startDiscordAdapter(options: DiscordAdapterOptions): Promise<DiscordAdapter> {
  const { config, agent, stores, storage } = options;
  const token = config.DISCORD_BOT_TOKEN;
  if (!token) throw new ConfigError('config: DISCORD_BOT_TOKEN is required to start the Discord adapter');
  const log = options.log.child({ platform: 'discord' });
  const client = createDiscordClient(config);
  const outbox = new Outbox(storage.outbox, log);
  const context: DiscordContext = {
    client, agent, stores, outbox, log,
    access: new AccessPolicy(accessLists(config)),
    memory: memoryGate(new DiscordAccess(client), parseMemoryEditors(config.MEMORY_EDITORS, config.ADMIN_USERS)),
  };
  const typing = new TypingIndicator((channelId) => client.rest.post(Routes.channelTyping(channelId)), log, options.tuning?.typingIntervalMs);
  const renderer = new DiscordRenderer({
    outbox, typing, log, resumeHint: '/hippo resume', linkPreviews: config.LINK_PREVIEWS === 'on',
    delivered: (event) => agent.delivered(event),
    contextPercent: async (sessionId) => (await agent.status(sessionId)).contextPercent,
    todo: async (session) => (await stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: session.id, path: todoDocumentPath }))?.content ?? null,
  });
  const roles = {
    inbound: new DiscordInbound(context),
    interactions: new DiscordInteractions(context),
    reactions: new DiscordReactions(context, storage.feedback, options.onFeedback ?? (() => undefined)),
    renderer,
    delivery: new DiscordDelivery(client.rest, options.attachments),
  } satisfies ChatRoles<Client>;

  // ALLOWED_WORKSPACES (context.ts servedHere): nothing from a server that is not listed reaches a
  // handler. Listeners go on before login: events can arrive right after READY.
  const serves = (guildId: string | null) => servedHere(context, guildId);
  registerRoles(roles, client);
  client.on(Events.GuildCreate, (guild) => {
    if (serves(guild.id)) return;
    log.warn({ guildId: guild.id }, 'discord-guild-left: the server is not in ALLOWED_WORKSPACES');
    guild.leave().catch((error: unknown) => log.warn({ guildId: guild.id, err: error instanceof Error ? error.message : String(error) }, 'discord-guild-leave-failed'));
  });
  client.on(Events.ShardDisconnect, (event) => log.error({ code: event.code }, 'discord-gateway-closed'));
  client.on(Events.ShardError, (error) => log.warn({ err: error.message }, 'discord-gateway-error'));
  client.on(Events.ShardResume, () => log.info('discord-gateway-resumed'));
  const unsubscribe = agent.deps.events.subscribe((event) => renderer.handle(event));

  const serve = options.serve ?? true;
  if (serve) await connectGateway(client, token, config.DISCORD_GUILD_IDS, serves, log, options.tuning?.connectTimeoutMs).catch((error: unknown) => {
    unsubscribe();
    client.removeAllListeners();
    throw error;
  });
  else {
    client.rest.setToken(token);
    log.info('discord-rendering-only: HIPPO_ROLE=worker (the gateway is an ingest process\'s)');
  }
  options.attachments?.register('discord', discordFileFetcher(config.DISCORD_API_URL));
  const sender = outbox.startSender('discord', roles.delivery.deliver, { ...options.tuning?.sender, optionalTargetOperations });

  let stopped = false;
  return {
    platform: 'discord',
    client,
    connected: () => !stopped && (!serve || (client.isReady() && client.ws.status === Status.Ready)),
    idle: async () => {
      await roles.inbound.idle();
      await renderer.flush();
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      renderer.stop();
      await roles.inbound.idle();
      await renderer.flush();
      await sender.stop();
      await client.destroy();
      log.info('discord-stopped');
    },
  };
}

/** Logs in to the gateway, says where the bot is, and registers `/hippo`. */
async function connectGateway(
  client: Client, token: string, guildIds: string | undefined, serves: (guildId: string) => boolean, log: Logger, timeoutMs: number | undefined,
): Promise<void> {
  await connectDiscord(client, token, timeoutMs);
  const elsewhere = [...client.guilds.cache.keys()].filter((guildId) => !serves(guildId));
  // Not left at start-up: a typo in the list must not make Hippo leave its own servers.
  if (elsewhere.length > 0) log.warn({ guildIds: elsewhere.slice(0, 20), count: elsewhere.length }, 'discord: the bot is in servers not in ALLOWED_WORKSPACES; it ignores them (remove it there)');
  const applicationId = client.application?.id ?? client.user?.id;
  log.info({ user: client.user?.tag, guilds: client.guilds.cache.size, ...(applicationId ? { inviteUrl: inviteUrl(applicationId) } : {}) }, 'discord-connected');
  if (applicationId) {
    await registerSlashCommands(client.rest, applicationId, parseGuildIds(guildIds), log).catch((error: unknown) =>
      log.warn({ err: error instanceof Error ? error.message : String(error) }, 'discord-commands-not-registered'));
  }
}
