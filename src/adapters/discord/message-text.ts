// What a Discord message says, as Hippo passes it on: the text without Hippo's own mention, other
// mentions shown as names (@Ada, #general), attachments listed by name and link.
import { cleanContent, type Message } from 'discord.js';
import { stripMention } from './discord-ids.js';

/** The message text for the agent (empty when there is nothing but a mention). */
export function messageText(message: Message, botUserId: string): string {
  const text = cleanContent(stripMention(message.content, botUserId), message.channel).trim();
  const attachments = [...message.attachments.values()].map((attachment) => `[attachment: ${attachment.name} ${attachment.url}]`);
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
