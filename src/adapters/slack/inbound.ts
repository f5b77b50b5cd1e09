// People's messages arriving from Slack: mentions start sessions, replies in a session's thread
// steer it, edits and deletions change still-queued steers, command words run commands. The
// durable write happens before this returns (the HTTP ack waits for it, product.md); reactions,
// answers and replies go out later through the outbox.
import { runCommand } from '../chat/command-runner.js';
import { commandArgument, exactCommand, helpText, type CommandVerb } from '../chat/commands.js';
import { splitMessage } from '../chat/split-message.js';
import type { SessionRecord } from '../../core/store.js';
import { slackAttachments } from './files.js';
import { messageEvent, type MessageEvent } from './payloads.js';
import { mentionPrefix, slackMessageKey, slackPlatform, slackThread, type SlackContext } from './slack-context.js';

/** Message subtypes that are a person writing; everything else (joins, bot posts, …) is ignored. */
const humanSubtypes = new Set([undefined, 'thread_broadcast', 'file_share', 'me_message']);

/** Answers longer than this are split (Slack's section limit, with room to spare). */
export const slackMessageLimit = 3_000;

/** Which delivery of an Events API event this is. */
export interface EventDelivery {
  teamId: string;
  /** The Events API event id. */
  eventId: string | undefined;
  /** Slack's retry number (x-slack-retry-num, Socket Mode's retry_attempt); 0 or absent on the first delivery. */
  retryNum?: number | undefined;
}

/** Handles one message or app_mention event. */
export async function handleMessageEvent(context: SlackContext, delivery: EventDelivery, raw: unknown): Promise<void> {
  const { teamId, eventId } = delivery;
  const parsed = messageEvent.safeParse(raw);
  if (!parsed.success) {
    context.log.debug({ eventId }, 'slack-event-not-understood');
    return;
  }
  const event = parsed.data;
  if (event.subtype === 'message_changed') return handleEdit(context, teamId, event);
  if (event.subtype === 'message_deleted') return handleDelete(context, teamId, event);
  if (!humanSubtypes.has(event.subtype) || isFromBot(context, event)) return;
  const eventKey = eventId ? `slack:event:${eventId}` : null;
  // Only a retry reads the processed ids (a first delivery cannot have been processed): it skips a
  // delivery that finished, e.g. chatter that was ignored before a session came to its thread.
  // A retry racing its first delivery passes; the steer key (or command key) holds then.
  if (eventKey && (delivery.retryNum ?? 0) > 0 && (await wasProcessed(context, eventKey))) return;
  await inFlight.run(slackMessageKey(teamId, event.channel, event.ts), () => handleHumanMessage(context, teamId, event));
  if (eventKey) await context.stores.events.markProcessed(eventKey);
}

async function handleHumanMessage(context: SlackContext, teamId: string, event: MessageEvent): Promise<void> {
  const { agent, identity } = context;
  const mention = `<@${identity.botUserId}>`;
  const mentioned = event.type === 'app_mention' || (event.text ?? '').includes(mention);
  const direct = event.channel_type === 'im' || event.channel.startsWith('D');
  const text = stripMention(event.text ?? '', identity.botUserId) || (event.subtype === 'file_share' ? '(shared a file)' : '');
  const address = slackThread(teamId, event.channel, event.thread_ts ?? event.ts);
  const messageKey = slackMessageKey(teamId, event.channel, event.ts);
  // Shared files are only named here; the worker fetches them when it takes the message.
  const attachments = slackAttachments(event);
  const knownName = mentioned || direct ? undefined : context.people.knownName(teamId, event.user ?? '');
  if (knownName !== undefined) {
    // A plain reply by someone already known: submit finds the thread's session itself (one
    // statement less on the ack path) and queues nothing where there is none (chatter).
    await agent.submit({ address, platformMessageKey: messageKey, authorId: event.user ?? '', authorName: knownName, text, attachments }, { startSession: false });
    return;
  }
  const session = await agent.findSession(address);
  const verb = mentioned || direct ? exactCommand(text) : null;
  if (session && verb) return runThreadCommand(context, session, verb, event, teamId, commandArgument(text));
  if (!session && !mentioned && !direct) return; // chatter in a thread Hippo is not part of
  if (!session && verb) return runThreadCommand(context, null, verb, event, teamId, commandArgument(text));
  const authorName = await context.people.name(teamId, event.user ?? '');
  if (session) {
    await agent.submit({ address, platformMessageKey: messageKey, authorId: event.user ?? '', authorName, text, attachments }, { startSession: false });
    return;
  }
  const inThread = event.thread_ts !== undefined && event.thread_ts !== event.ts;
  const [history, visibility] = await Promise.all([
    inThread ? context.people.threadSoFar(teamId, event.channel, address.threadKey, event.ts) : '',
    context.people.visibility(teamId, event.channel, event.channel_type),
  ]);
  const request = text || '(mentioned Hippo without a message: look at the thread and help)';
  const { inserted } = await agent.submit(
    { address: { ...address, visibility }, platformMessageKey: messageKey, authorId: event.user ?? '', authorName, text: history ? withHistory(history, request) : request, attachments },
    { startSession: true, title: request.slice(0, 80) },
  );
  if (inserted) context.log.info({ channelId: event.channel, threadTs: address.threadKey, fromThread: inThread }, 'slack-session-started');
}

/** Runs a command said in a thread (once per message) and answers in the thread. */
async function runThreadCommand(context: SlackContext, session: SessionRecord | null, verb: CommandVerb, event: MessageEvent, teamId: string, argument: string): Promise<void> {
  const messageKey = slackMessageKey(teamId, event.channel, event.ts);
  // app_mention and message deliver the same words twice: the command runs once per message.
  if (!(await context.stores.events.markProcessed(`${messageKey}:command`))) return;
  const threadTs = event.thread_ts ?? event.ts;
  context.background.run('slack-command', async () => {
    const actor = { userId: event.user ?? '', name: await context.people.name(teamId, event.user ?? '') };
    const reply = session
      ? await runCommand(verb, { agent: context.agent, stores: context.stores, session, actor, prefix: mentionPrefix, argument })
      : verb === 'help'
        ? helpText(mentionPrefix)
        : `There is no Hippo session in this thread yet: mention me with a request to start one (\`${mentionPrefix} help\` lists the commands).`;
    const parts = splitMessage(reply, { limit: slackMessageLimit });
    for (const [index, part] of parts.entries()) {
      await context.outbox.enqueue({
        idempotencyKey: `command:${messageKey}:${index}`,
        sessionId: session?.id ?? null,
        platform: slackPlatform,
        operation: 'post',
        payload: { channel: event.channel, thread_ts: threadTs, markdown: part },
      });
    }
  }, { verb });
}

/** An edited reply changes its steer while it is still queued. */
async function handleEdit(context: SlackContext, teamId: string, event: MessageEvent): Promise<void> {
  const message = event.message;
  if (!message || message.bot_id || !message.user || message.user === context.identity.botUserId) return;
  const key = slackMessageKey(teamId, event.channel, message.ts);
  const edited = await context.stores.steers.edit(key, stripMention(message.text ?? '', context.identity.botUserId));
  if (edited) context.log.info({ key }, 'slack-steer-edited');
}

/** A deleted reply withdraws its steer while it is still queued. */
async function handleDelete(context: SlackContext, teamId: string, event: MessageEvent): Promise<void> {
  if (!event.deleted_ts) return;
  const key = slackMessageKey(teamId, event.channel, event.deleted_ts);
  if (await context.stores.steers.withdraw(key)) context.log.info({ key }, 'slack-steer-withdrawn');
}

function isFromBot(context: SlackContext, event: MessageEvent): boolean {
  return Boolean(event.bot_id) || !event.user || event.user === context.identity.botUserId || event.subtype === 'bot_message';
}

/** Removes the bot's own mention (`<@U123>` or `<@U123|hippo>`) and tidies the spaces left. */
export function stripMention(text: string, botUserId: string): string {
  return text.replace(new RegExp(`<@${botUserId}(\\|[^>]*)?>`, 'g'), ' ').replace(/[ \t]{2,}/g, ' ').trim();
}

/** The first steer of a session started inside an existing thread: the thread so far, then the request. */
export function withHistory(history: string, request: string): string {
  return `[The thread so far, before I was mentioned]\n${history}\n[End of the thread so far]\n\n${request}`;
}

async function wasProcessed(context: SlackContext, key: string): Promise<boolean> {
  const rows = await context.prisma.$queryRaw<unknown[]>`SELECT 1 FROM processed_events WHERE key = ${key}`;
  return rows.length > 0;
}

/**
 * Serialises work on the same Slack message within this process: app_mention and message often
 * arrive together, and the second must see what the first stored (one thread read, one session).
 */
class KeyedSerializer {
  private readonly tails = new Map<string, Promise<void>>();

  async run(key: string, work: () => Promise<void>): Promise<void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(work, work);
    const tail = current.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      await current;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

const inFlight = new KeyedSerializer();
