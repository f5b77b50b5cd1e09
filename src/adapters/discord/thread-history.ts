// "A mention inside an existing thread with no session starts one that first reads the thread so
// far": the thread's starter and recent messages, quoted with their authors' names, become the
// start of the first steer message. Thread text stays quoted chat, never instructions.
import type { AnyThreadChannel, Message } from 'discord.js';
import { authorName, messageText } from './message-text.js';

/** How many earlier messages are read (Discord returns at most 100 per call). */
const historyLimit = 50;
/** The quoted history is cut to its newest part beyond this many characters. */
const historyChars = 8_000;

/** The thread's messages before `beforeId`, oldest first, as "Name: text" lines; '' when none. */
export async function readThreadSoFar(thread: AnyThreadChannel, beforeId: string, botUserId: string): Promise<string> {
  const fetched = await thread.messages.fetch({ limit: historyLimit, before: beforeId });
  const earlier = [...fetched.values()].sort((left, right) => (BigInt(left.id) < BigInt(right.id) ? -1 : 1));
  const starter = await thread.fetchStarterMessage().catch(() => null);
  // A forum post's starter sits inside the thread too: keep each message once.
  const messages = (starter && !earlier.some((message) => message.id === starter.id) ? [starter, ...earlier] : earlier).filter((message) => !message.system);
  const lines = messages.map((message) => quoteLine(message, botUserId)).filter((line) => line !== '');
  let text = lines.join('\n');
  if (text.length > historyChars) text = `…\n${text.slice(text.length - historyChars)}`;
  return text;
}

/** The first steer of a session started inside a thread: what was said before, then the request. */
export function withThreadHistory(history: string, request: string): string {
  if (history === '') return request;
  return `(Earlier messages in this thread, oldest first:)\n${history}\n(End of earlier messages.)\n\n${request}`;
}

function quoteLine(message: Message, botUserId: string): string {
  const text = messageText(message, botUserId);
  if (text === '') return '';
  const name = message.author.id === botUserId ? 'Hippo' : `${authorName(message)}${message.author.bot ? ' (bot)' : ''}`;
  return `${name}: ${text.replace(/\n/g, '\n  ')}`;
}
