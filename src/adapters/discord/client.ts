// The discord.js client Hippo runs on, and the connection at start-up. Discord closes the gateway
// with 4014 when the bot asks for the privileged Message Content intent without it being enabled;
// that is an operator's fix, so start-up stops with one line saying where to switch it on.
import { Client, Events, GatewayCloseCodes, GatewayIntentBits, Partials, type CloseEvent } from 'discord.js';
import type { Config } from '../../config.js';
import { ConfigError, PlatformError } from '../../core/errors.js';

/** The one line shown when Discord refuses the Message Content intent (close code 4014). */
export const disallowedIntentsMessage =
  "config: Discord refused the Message Content intent (gateway close code 4014 'Disallowed intents'): enable it in the Discord Developer Portal → your application → Bot → Privileged Gateway Intents → Message Content Intent, then start Hippo again";

/** The one line shown when Discord refuses DISCORD_BOT_TOKEN. */
export const invalidTokenMessage =
  'config: DISCORD_BOT_TOKEN was refused by Discord (authentication failed): copy the token from the Discord Developer Portal → your application → Bot → Reset Token';

/** Gateway intents Hippo needs: guild channels and threads, their messages and text, DMs, and reactions (👍 / 👎 on answers). */
export const hippoIntents = [
  GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages,
  GatewayIntentBits.GuildMessageReactions, GatewayIntentBits.DirectMessageReactions,
];

/** A client for Hippo: DMs and uncached messages arrive as partials; DISCORD_API_URL sets the REST base. */
export function createDiscordClient(config: Pick<Config, 'DISCORD_API_URL'>): Client {
  return new Client({
    intents: hippoIntents,
    // DM channels are never cached up front; edits, deletes and reactions may name messages from
    // before a restart (and reactions users the client has not seen).
    partials: [Partials.Channel, Partials.Message, Partials.Reaction, Partials.User],
    rest: { version: '10', ...(config.DISCORD_API_URL ? { api: config.DISCORD_API_URL.replace(/\/+$/, '') } : {}) },
    // Nothing Hippo sends through the client pings anyone.
    allowedMentions: { parse: [] },
  });
}

/**
 * Logs in and resolves once the client is ready (guilds and channels received). Rejects with a
 * ConfigError for a refused token or intent, with a PlatformError for anything else, after
 * destroying the client.
 */
export async function connectDiscord(client: Client, token: string, timeoutMs = 90_000): Promise<void> {
  const cleanups: Array<() => void> = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const onReady = () => resolve();
      const onDisconnect = (event: CloseEvent) => reject(closeError(event.code));
      client.once(Events.ClientReady, onReady);
      client.on(Events.ShardDisconnect, onDisconnect);
      const timer = setTimeout(() => reject(new PlatformError('discord', 'connect', `Discord gateway not ready after ${timeoutMs / 1000} s`)), timeoutMs);
      cleanups.push(() => {
        clearTimeout(timer);
        client.off(Events.ClientReady, onReady);
        client.off(Events.ShardDisconnect, onDisconnect);
      });
      client.login(token).catch((error: unknown) => reject(loginError(error)));
    });
  } catch (error) {
    await client.destroy().catch(() => undefined);
    throw error;
  } finally {
    for (const cleanup of cleanups) cleanup();
  }
}

/** The error for a gateway close that ends the connection for good. */
export function closeError(code: number): Error {
  switch (code) {
    case GatewayCloseCodes.DisallowedIntents:
      return new ConfigError(disallowedIntentsMessage);
    case GatewayCloseCodes.AuthenticationFailed:
      return new ConfigError(invalidTokenMessage);
    default:
      return new PlatformError('discord', 'connect', `Discord closed the gateway connection (code ${code})`);
  }
}

function loginError(error: unknown): Error {
  if (error instanceof ConfigError || error instanceof PlatformError) return error;
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  const status = typeof error === 'object' && error !== null && 'status' in error ? error.status : undefined;
  if (code === 'TokenInvalid' || status === 401) return new ConfigError(invalidTokenMessage);
  const message = error instanceof Error ? error.message : String(error);
  if (/disallowed intents/i.test(message)) return new ConfigError(disallowedIntentsMessage);
  return new PlatformError('discord', 'connect', `Discord login failed: ${message}`, undefined, { cause: error });
}
