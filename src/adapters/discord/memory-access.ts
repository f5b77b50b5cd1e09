// Discord's side of memory access (chat/memory-access.ts): where an interaction happened (its
// guild, and the channel a thread belongs to), whether the person is a memory editor (their id or
// one of their roles in MEMORY_EDITORS), and who is in an invite-only thread. A channel's space is
// reached from inside the channel (its threads); a private thread's only by the thread's members,
// as Discord says at the moment of the action.
import type { Channel, Client, Interaction } from 'discord.js';
import type { AccessRequest, AccessResolver } from '../chat/memory-access.js';
import { addressOf } from './place.js';
import type { DiscordContext } from './context.js';

/**
 * Discord's answers: editors by user id or role; members of an invite-only thread by asking
 * Discord (fresh, not cached: someone removed from the thread loses its memory at once). A
 * channel's members are not looked up: only an interaction inside it (its threads) counts.
 */
export class DiscordAccess implements AccessResolver {
  constructor(private readonly client: Client) {}

  async isMember(_workspaceId: string, channelId: string, userId: string): Promise<boolean> {
    const channel = await this.client.channels.fetch(channelId).catch(() => null);
    if (!channel?.isThread()) return false;
    return channel.members.fetch({ member: userId, force: true }).then(() => true, () => false);
  }

  /** A guild has no guests: its workspace-wide space is its members' (the request comes from the guild). */
  async isWorkspaceMember(): Promise<boolean> {
    return true;
  }

  async isEditor(request: AccessRequest, editors: ReadonlySet<string>): Promise<boolean> {
    return editors.has(request.userId) || (request.groupIds ?? []).some((role) => editors.has(role));
  }
}

/** The access request of an interaction: its guild ("@me" in a DM), the thread's parent channel, the member's roles. */
export function accessRequest(context: Pick<DiscordContext, 'client'>, interaction: Interaction): Promise<AccessRequest> {
  return accessRequestOf(context, interaction.channelId, interaction.channel, interaction.guildId, interaction.user.id, memberRoles(interaction));
}

/** The access request of something a person did in `channelId` (a message, an interaction). */
export async function accessRequestOf(context: Pick<DiscordContext, 'client'>, channelId: string | null, channel: Channel | null, guildId: string | null, userId: string, roles: string[]): Promise<AccessRequest> {
  const address = channelId ? await addressOf(context.client, channelId, channel) : null;
  return { platform: 'discord', workspaceId: guildId ?? '@me', channelId: address?.channelId ?? channelId, userId, groupIds: roles };
}

/** The role ids of the interaction's member (a cached GuildMember or the raw API member). */
function memberRoles(interaction: Interaction): string[] {
  const member = interaction.member;
  if (!member) return [];
  if (Array.isArray(member.roles)) return member.roles.filter((role): role is string => typeof role === 'string');
  return 'cache' in member.roles ? [...member.roles.cache.keys()] : [];
}
