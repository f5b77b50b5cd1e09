// Wire-format objects of the fake Discord (API v10 JSON as the gateway and REST send them): users,
// members, channels, messages, the guild, interactions. Only what discord.js reads.

/** A user as Discord sends it. */
export interface FakeUser {
  id: string;
  username: string;
  global_name: string | null;
  discriminator: string;
  avatar: null;
  bot?: boolean;
}

/** A channel (text channel, thread or DM) as Discord sends it. */
export type FakeChannel = Record<string, unknown> & { id: string; type: number; guild_id?: string; parent_id?: string | null; name?: string };

/** A message as Discord sends it. */
export type FakeMessage = Record<string, unknown> & {
  id: string;
  channel_id: string;
  author: FakeUser;
  content: string;
  embeds: Array<Record<string, unknown>>;
  components: Array<Record<string, unknown>>;
  guild_id?: string;
  nonce?: string;
};

let sequence = 0n;

/** A fresh snowflake (timestamp-based, increasing). */
export function snowflake(): string {
  sequence += 1n;
  return String(((BigInt(Date.now()) - 1_420_070_400_000n) << 22n) + (sequence % 4096n));
}

/** A user (a bot when `bot`). */
export function user(username: string, globalName: string | null, bot = false): FakeUser {
  return { id: snowflake(), username, global_name: globalName, discriminator: '0', avatar: null, ...(bot ? { bot: true } : {}) };
}

const joinedAt = new Date('2024-01-01T00:00:00Z').toISOString();

/** A guild member object for `user` (nickname optional). */
export function member(of: FakeUser, nick: string | null = null, roles: string[] = []): Record<string, unknown> {
  return { user: of, nick, roles, joined_at: joinedAt, deaf: false, mute: false, flags: 0, permissions: '2251799813685247' };
}

/** A permission overwrite of a channel: a role's (type 0) or a member's (type 1) allowed and denied bits. */
export interface FakeOverwrite {
  id: string;
  type: 0 | 1;
  allow: string;
  deny: string;
}

/**
 * What the fake's @everyone may do by default: every permission bit Discord defines today but
 * Administrator (which overrides every overwrite; Discord never gives it to @everyone by itself).
 */
export const allPermissions = 2251799813685247n & ~8n;

/** The @everyone role of a guild (its id is the guild's). */
export function everyoneRole(guildId: string, permissions = allPermissions): Record<string, unknown> {
  return { id: guildId, name: '@everyone', color: 0, hoist: false, position: 0, permissions: String(permissions), managed: false, mentionable: false, flags: 0 };
}

/** A guild text channel. */
export function textChannel(guildId: string, name: string): FakeChannel {
  return { id: snowflake(), type: 0, guild_id: guildId, name, position: 0, parent_id: null, permission_overwrites: [], nsfw: false, topic: null, last_message_id: null, rate_limit_per_user: 0 };
}

/** A public thread in `parentId` (threads started from a message take the message's id). */
export function threadChannel(guildId: string, parentId: string, name: string, ownerId: string, id = snowflake()): FakeChannel {
  return {
    id, type: 11, guild_id: guildId, parent_id: parentId, name, owner_id: ownerId, message_count: 0, member_count: 1,
    rate_limit_per_user: 0, flags: 0, last_message_id: null,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
  };
}

/** A DM channel with `recipient`. */
export function dmChannel(recipient: FakeUser): FakeChannel {
  return { id: snowflake(), type: 1, recipients: [recipient], last_message_id: null, flags: 0 };
}

/** A message in `channel`; guild messages carry guild_id and the author's member. */
export function message(channel: FakeChannel, author: FakeUser, content: string, extra: { mentions?: FakeUser[]; mentionRoles?: string[]; nick?: string | null; id?: string; roles?: string[] } = {}): FakeMessage {
  const guildId = channel.guild_id;
  return {
    id: extra.id ?? snowflake(), channel_id: channel.id, author, content, timestamp: new Date().toISOString(), edited_timestamp: null,
    tts: false, mention_everyone: false, mentions: extra.mentions ?? [], mention_roles: extra.mentionRoles ?? [], attachments: [], embeds: [], components: [],
    pinned: false, type: 0, flags: 0, channel_type: channel.type,
    ...(guildId ? { guild_id: guildId, member: memberWithoutUser(author, extra.nick ?? null, extra.roles ?? []) } : {}),
  };
}

function memberWithoutUser(of: FakeUser, nick: string | null, roles: string[]): Record<string, unknown> {
  const { user: _user, ...rest } = member(of, nick, roles);
  return rest;
}

/** The GUILD_CREATE payload: the guild with its channels, active threads and the bot's member. */
export function guildCreate(guild: { id: string; name: string; ownerId: string; botRoleId: string; roleIds?: string[] }, channels: FakeChannel[], threads: FakeChannel[], bot: FakeUser): Record<string, unknown> {
  // The role Discord creates for a bot on invite: autocomplete offers it next to the bot user.
  const botRole = { id: guild.botRoleId, name: bot.username, color: 0, hoist: false, position: 1, permissions: '311385246784', managed: true, mentionable: true, flags: 0, tags: { bot_id: bot.id } };
  return {
    id: guild.id, name: guild.name, icon: null, splash: null, discovery_splash: null, owner_id: guild.ownerId, afk_channel_id: null,
    afk_timeout: 300, verification_level: 0, default_message_notifications: 0, explicit_content_filter: 0,
    roles: [
      everyoneRole(guild.id), botRole,
      ...(guild.roleIds ?? []).map((id, index) => ({ id, name: `role-${index + 1}`, color: 0, hoist: false, position: 2 + index, permissions: '0', managed: false, mentionable: true, flags: 0 })),
    ],
    emojis: [], features: [], mfa_level: 0, application_id: null, system_channel_id: null, system_channel_flags: 0, rules_channel_id: null,
    vanity_url_code: null, description: null, banner: null, premium_tier: 0, preferred_locale: 'en-US', public_updates_channel_id: null,
    nsfw_level: 0, stickers: [], premium_progress_bar_enabled: false, joined_at: joinedAt, large: false, unavailable: false, member_count: 3,
    voice_states: [], members: [{ ...member(bot), roles: [guild.botRoleId] }], channels, threads, presences: [], stage_instances: [], guild_scheduled_events: [], soundboard_sounds: [],
  };
}

/**
 * An INTERACTION_CREATE payload (2 slash command, 3 component, 5 modal submit) by `by` in
 * `channel`; `roles` are the member's role ids.
 */
export function interaction(options: { applicationId: string; channel: FakeChannel; by: FakeUser; type: 2 | 3 | 5; data: Record<string, unknown>; message?: FakeMessage; roles?: string[] }): Record<string, unknown> & { id: string; token: string } {
  const { channel, by } = options;
  const guildId = channel.guild_id;
  return {
    id: snowflake(), token: `itoken-${snowflake()}`, application_id: options.applicationId, type: options.type, version: 1,
    channel_id: channel.id, channel: { id: channel.id, type: channel.type, ...(guildId ? { guild_id: guildId, parent_id: channel.parent_id ?? null } : {}) },
    data: options.data, app_permissions: '2251799813685247', locale: 'en-US', entitlements: [], context: guildId ? 0 : 1,
    authorizing_integration_owners: guildId ? { '0': guildId } : { '1': by.id }, attachment_size_limit: 8_388_608,
    ...(guildId ? { guild_id: guildId, guild_locale: 'en-US', member: member(by, null, options.roles ?? []) } : { user: by }),
    ...(options.message ? { message: options.message } : {}),
  };
}
