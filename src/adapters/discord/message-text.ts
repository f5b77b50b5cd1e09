// What a Discord message says, as Hippo passes it on: the text without Hippo's own mention, other
// mentions shown as names (@Ada, #general), attachments listed by name and link.
import { cleanContent, type Message } from 'discord.js';
import { mentionPattern, mentionsBot, stripMention } from './ids.js';

/** How this message would mention Hippo (its user, or its managed role in the message's server). */
export function botMention(message: Message, botUserId: string): RegExp {
  return mentionPattern(botUserId, message.guild?.roles.botRoleFor(botUserId)?.id);
}

/** True when the message mentions Hippo. */
export function mentionsHippo(message: Message, botUserId: string): boolean {
  return message.mentions.users.has(botUserId) || mentionsBot(message.content, botMention(message, botUserId));
}

/**
 * The message text for the agent (empty when there is nothing but a mention). Attachments are
 * listed by name and link unless `listAttachments` is false (a steer carries them as files).
 */
export function messageText(message: Message, botUserId: string, listAttachments = true): string {
  const text = cleanContent(stripMention(message.content, botMention(message, botUserId)), message.channel).trim();
  const attachments = listAttachments ? [...message.attachments.values()].map((attachment) => `[attachment: ${attachment.name} ${attachment.url}]`) : [];
  return [text, ...attachments].filter((part) => part !== '').join('\n');
}

/** The name people see for the author: server nickname, display name, or username. */
export function authorName(message: Message): string {
  return message.member?.displayName ?? message.author.displayName ?? message.author.username;
}

/** True for a message a person wrote (not a bot, not a webhook, not a system notice). */
export function isPersonMessage(message: Message, botUserId: string): boolean {
  if (message.author.id === botUserId || message.author.bot || message.author.system) return false;
  if (message.webhookId) return false;
  return !message.system;
}
