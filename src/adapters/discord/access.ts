// The access rules on Discord: who asks (a user id and the roles of their member in the guild, as
// the message or interaction carries them) and how a refusal is told. An interaction (button,
// /hippo) gets an ephemeral reply. A message cannot get one: it gets a 🚫 reaction, and when it
// addressed Hippo (a mention or a DM: a request or a command) also a short reply saying why.
// Both are sent directly, not through the outbox: a refused request stores nothing.
import { MessageFlags, Routes, type GuildMember, type Interaction, type Message, type RepliableInteraction } from 'discord.js';
import type { AccessDecision, Requester } from '../chat/access-policy.js';
import type { DiscordContext } from './context.js';

/** The reaction on a refused message. */
export const refusedEmoji = '🚫';

type Refusal = Extract<AccessDecision, { allowed: false }>;

/** The author of a message as the access policy sees them (roles: their member's in this guild). */
export function messageRequester(message: Message): Requester {
  return { userId: message.author.id, inGroup: async (roleId) => message.member?.roles.cache.has(roleId) ?? false };
}

/** Whoever clicked or typed /hippo, with their member's roles (none in a DM). */
export function interactionRequester(interaction: Interaction): Requester {
  const roles = rolesOf(interaction.member);
  return { userId: interaction.user.id, inGroup: async (roleId) => roles.includes(roleId) };
}

/** Reacts 🚫 on a refused message and, when it addressed Hippo, replies why. Never throws. */
export async function refuseMessage(context: DiscordContext, message: Message, decision: Refusal, addressed: boolean): Promise<void> {
  context.log.info({ userId: message.author.id, channelId: message.channelId, rule: decision.rule }, 'discord-request-refused');
  const rest = context.client.rest;
  try {
    await rest.put(Routes.channelMessageOwnReaction(message.channelId, message.id, encodeURIComponent(refusedEmoji)));
    if (addressed) {
      await rest.post(Routes.channelMessages(message.channelId), {
        body: { content: decision.message, message_reference: { message_id: message.id, fail_if_not_exists: false }, allowed_mentions: { parse: [] } },
      });
    }
  } catch (error) {
    context.log.warn({ err: error instanceof Error ? error.message : String(error), messageId: message.id }, 'discord-refusal-not-sent');
  }
}

/** Answers a refused interaction with an ephemeral reply (it was not acknowledged yet). */
export async function refuseInteraction(context: DiscordContext, interaction: RepliableInteraction, decision: Refusal): Promise<void> {
  context.log.info({ userId: interaction.user.id, channelId: interaction.channelId, rule: decision.rule }, 'discord-request-refused');
  await interaction.reply({ content: decision.message, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
}

function rolesOf(member: Interaction['member']): string[] {
  if (!member) return [];
  if (Array.isArray(member.roles)) return member.roles;
  return [...(member as GuildMember).roles.cache.keys()];
}
