// Discord's side of memory access (chat/memory-access.ts): where an interaction happened (its
// guild, and the channel a thread belongs to), and whether the person is a memory editor (their
// id or one of their roles in MEMORY_EDITORS). Hippo sees who is in a conversation only through
// the interaction itself: a memory space is reached from inside its conversation.
import type { Channel, Interaction } from 'discord.js';
import type { AccessRequest, AccessResolver } from '../chat/memory-access.js';
import { addressOf } from './discord-place.js';
import type { DiscordContext } from './discord-context.js';

/** Discord's answers: no membership look-up from elsewhere; editors by user id or role. */
export const discordAccess: AccessResolver = {
  // Only an interaction inside the space's conversation (its threads, or the DM) counts as a member.
  isMember: async () => false,
  isEditor: async (request, editors) => editors.has(request.userId) || (request.groupIds ?? []).some((role) => editors.has(role)),
};

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
