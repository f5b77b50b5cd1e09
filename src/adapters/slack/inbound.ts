// People's messages arriving from Slack: mentions start sessions, replies in a session's thread
// steer it, edits and deletions change still-queued steers, command words run commands. The
// durable write happens before this returns (the HTTP ack waits for it, docs/product.md); reactions,
// answers and replies go out later through the outbox.
import { KeyedQueue } from '../chat/keyed-queue.js';
import { runCommand, type CommandReply } from '../chat/command-runner.js';
import { helpText, mentionCommand, textVerbs, type CommandVerb } from '../chat/commands.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { slackAnswerParts } from './slack-text.js';
import { browserAnswer, slackCommandScope } from './command-scope.js';
import type { SessionRecord } from '../../core/store.js';
import { setThreadTitle } from './assistant-pane.js';
import { postEphemeral, refuse } from './ephemeral.js';
import { sendFilePrivately } from './private-answer.js';
import { maySteerMemory, sessionVisibility } from './workspace-memory.js';
import { slackAttachments, uploadFile } from './files.js';
import { eventEnvelope, messageEvent, type MessageEvent } from './payloads.js';
import type { SlackListeners } from './routes.js';
import type { ChatInbound } from '../chat/chat-adapter.js';
import { mentionPrefix, slackMessageKey, slackPlatform, slackThread, workspaceOf, type SlackContext, type SlackIdentity } from './context.js';

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

/** What became of a person's message: a refused one leaves no trace, not even "processed". */
/** 'recorded': the message was stored with its event id (nothing more to record). */
type Outcome = 'handled' | 'recorded' | 'ignored' | 'refused';

/** Handles message and app_mention events (new, edited and deleted messages). */
export class SlackInbound implements ChatInbound<SlackListeners> {
  constructor(private readonly context: SlackContext) {}

  /** One handler for app_mention and message: Slack often sends both for one mention. */
  register({ routes }: SlackListeners): void {
    const onMessage = async ({ event, body, context: bolt }: { event: unknown; body: unknown; context: { retryNum?: number } }) => {
      const envelope = eventEnvelope.safeParse(body);
      if (!envelope.success) return this.context.log.warn('slack-event-without-team: ignored');
      await this.handle({ teamId: envelope.data.team_id, eventId: envelope.data.event_id, retryNum: bolt.retryNum }, event);
    };
    routes.event('app_mention', onMessage);
    routes.event('message', onMessage);
  }

  /** Handles one message or app_mention event. */
  handle(delivery: EventDelivery, raw: unknown): Promise<void> {
    return handleMessageEvent(this.context, delivery, raw);
  }

  /** Resolves when every message this process is handling is handled. */
  idle(): Promise<void> {
    return inFlight.idle();
  }
}

async function handleMessageEvent(context: SlackContext, delivery: EventDelivery, raw: unknown): Promise<void> {
  const { teamId, eventId } = delivery;
  const parsed = messageEvent.safeParse(raw);
  if (!parsed.success) {
    context.log.debug({ eventId }, 'slack-event-not-understood');
    return;
  }
  const event = parsed.data;
  const workspace = await context.workspaces.get(teamId);
  if (!workspace) return; // uninstalled since Bolt authorized the event
  const { identity } = workspace;
  if (event.subtype === 'message_changed') return handleEdit(context, teamId, identity, event);
  if (event.subtype === 'message_deleted') return handleDelete(context, teamId, event);
  if (!humanSubtypes.has(event.subtype) || isFromBot(identity, event)) return;
  const eventKey = eventId ? `slack:event:${eventId}` : null;
  // Only a retry reads the processed ids (a first delivery cannot have been processed): it skips a
  // delivery that finished, e.g. chatter that was ignored before a session came to its thread.
  // A retry racing its first delivery passes; the steer key (or command key) holds then.
  if (eventKey && (delivery.retryNum ?? 0) > 0 && (await context.stores.events.wasProcessed(eventKey))) return;
  const outcome = await inFlight.run(slackMessageKey(teamId, event.channel, event.ts), () => handleHumanMessage(context, teamId, identity, event, eventKey ?? undefined));
  if (eventKey && outcome !== 'refused' && outcome !== 'recorded') await context.stores.events.markProcessed(eventKey);
}

async function handleHumanMessage(context: SlackContext, teamId: string, identity: SlackIdentity, event: MessageEvent, eventKey: string | undefined): Promise<Outcome> {
  const submitted = eventKey === undefined ? {} : { eventKey };
  const { agent, access } = context;
  const userId = event.user ?? '';
  const mention = `<@${identity.botUserId}>`;
  const mentioned = event.type === 'app_mention' || (event.text ?? '').includes(mention);
  const direct = isDirect(event);
  const text = stripMention(event.text ?? '', identity.botUserId) || (event.subtype === 'file_share' ? '(shared a file)' : '');
  const address = slackThread(teamId, event.channel, event.thread_ts ?? event.ts);
  const messageKey = slackMessageKey(teamId, event.channel, event.ts);
  // Shared files are only named here; the worker fetches them when it takes the message.
  const attachments = slackAttachments(event);
  const requester = context.people.requester(teamId, userId);
  const target = { teamId, channelId: event.channel, userId, threadTs: event.thread_ts };
  const knownName = mentioned || direct ? undefined : context.people.knownName(teamId, userId);
  if (knownName !== undefined && (await access.maySteer(requester)).allowed) {
    // A plain reply by someone already known: the ack's one statement finds the thread's session,
    // queues the message and records the event, and queues nothing where there is none (chatter).
    await agent.submit({ address, platformMessageKey: messageKey, authorId: userId, authorName: knownName, text, attachments }, { startSession: false, ...submitted });
    return 'recorded';
  }
  const said = mentioned || direct ? mentionCommand(text) : null;
  // A message at the top of a channel or DM starts its own thread: it has no session before it (a
  // redelivery finds its own in the intake statement), so only a command or a reply looks one up.
  const threadReply = event.thread_ts !== undefined && event.thread_ts !== event.ts;
  const session = said || threadReply ? await agent.findSession(address) : null;
  // Without a session, "remember …" has no context to fork memory from: it is a request then.
  const command = said && (session || !textVerbs.has(said.verb)) ? said : null;
  if (session && command) return runThreadCommand(context, session, command, event, teamId);
  if (!session && !mentioned && !direct) return 'ignored'; // chatter in a thread Hippo is not part of
  if (!session && command) return runThreadCommand(context, null, command, event, teamId);
  if (session) {
    let decision = await access.maySteer(requester);
    // A guest may not steer a session that works from the workspace members' memory.
    if (decision.allowed) decision = await maySteerMemory(context, session, teamId, userId);
    // A stranger chatting in a session's thread is told once an hour, not at every message.
    if (!decision.allowed) return (refuse(context, target, decision, `steer:${session.id}:${userId}`), 'refused');
    const authorName = await context.people.name(teamId, userId);
    await agent.submit({ address, platformMessageKey: messageKey, authorId: userId, authorName, text, attachments }, { startSession: false, ...submitted });
    return 'recorded';
  }
  const decision = await access.mayStart(requester, { channelId: event.channel, direct });
  if (!decision.allowed) return (refuse(context, target, decision, `message:${messageKey}`), 'refused');
  const [authorName, history, visibility] = await Promise.all([
    context.people.name(teamId, userId),
    threadReply ? context.people.threadSoFar(teamId, event.channel, address.threadKey, event.ts) : '',
    sessionVisibility(context, teamId, event.channel, event.channel_type, userId),
  ]);
  const request = text || '(mentioned Hippo without a message: look at the thread and help)';
  const { inserted } = await agent.submit(
    { address: { ...address, visibility }, platformMessageKey: messageKey, authorId: userId, authorName, text: history ? withHistory(history, request) : request, attachments },
    { startSession: true, title: request.slice(0, 80), ...submitted },
  );
  if (!inserted) return 'recorded';
  context.log.info({ channelId: event.channel, threadTs: address.threadKey, fromThread: threadReply }, 'slack-session-started');
  // A direct thread is (most likely) one of the assistant pane: it is titled after the request.
  if (direct && threadReply) setThreadTitle(context, teamId, event.channel, address.threadKey, request);
  return 'recorded';
}

/**
 * Runs a command said in a thread (once per message) and answers in the thread; a refusal goes
 * only to the person who asked, and `memory` comes as the browser with its ⋯ menus.
 */
async function runThreadCommand(context: SlackContext, session: SessionRecord | null, command: { verb: CommandVerb; rest: string }, event: MessageEvent, teamId: string): Promise<Outcome> {
  const { verb, rest } = command;
  const messageKey = slackMessageKey(teamId, event.channel, event.ts);
  const userId = event.user ?? '';
  const requester = context.people.requester(teamId, userId);
  // Without a session the answer is public help: only for someone who could start one here, so a
  // person the lists refuse cannot make Hippo talk in channels (they get the refusal, privately).
  const decision = session
    ? await context.access.mayCommand(verb, requester, session)
    : await context.access.mayStart(requester, { channelId: event.channel, direct: isDirect(event) });
  if (!decision.allowed) return (refuse(context, { teamId, channelId: event.channel, userId, threadTs: event.thread_ts ?? event.ts }, decision, `message:${messageKey}`), 'refused');
  // app_mention and message deliver the same words twice: the command runs once per message.
  if (!(await context.stores.events.markProcessed(`${messageKey}:command`))) return 'handled';
  const threadTs = event.thread_ts ?? event.ts;
  context.background.run('slack-command', async () => {
    const asker = { teamId, userId, name: await context.people.name(teamId, userId), channelId: event.channel };
    const reply: CommandReply = session
      ? await runCommand(verb, slackCommandScope(context, session, asker, mentionPrefix), rest)
      : {
          private: false,
          text: verb === 'help'
            ? helpText(mentionPrefix)
            : `There is no Hippo session in this thread yet: mention me with a request to start one (\`${mentionPrefix} help\` lists the commands).`,
        };
    if (reply.private) {
      const text = reply.file ? await sendFilePrivately(context, teamId, asker.userId, { ...reply, file: reply.file }) : reply.text;
      await postEphemeral(context, { teamId, channelId: event.channel, userId: asker.userId, threadTs }, markdownToMrkdwn(text));
      return;
    }
    const browser = session ? await browserAnswer(context, verb, reply, session, { c: event.channel, t: threadTs }) : null;
    if (browser) {
      await context.outbox.enqueue({
        idempotencyKey: `command:${messageKey}:browser`, sessionId: session?.id ?? null, platform: slackPlatform, operation: 'post',
        payload: { team: teamId, channel: event.channel, thread_ts: threadTs, ...browser },
      });
      return;
    }
    const parts = slackAnswerParts(reply.text, slackMessageLimit);
    for (const [index, part] of parts.entries()) {
      await context.outbox.enqueue({
        idempotencyKey: `command:${messageKey}:${index}`,
        sessionId: session?.id ?? null,
        platform: slackPlatform,
        operation: 'post',
        payload: { team: teamId, channel: event.channel, thread_ts: threadTs, markdown: part },
      });
    }
    // The export's bytes are too large for an outbox row: uploaded now (the command ran once).
    if (reply.file) await uploadFile((await workspaceOf(context, teamId)).client, { channel: event.channel, threadTs }, reply.file.name, reply.file.data);
  }, { verb });
  return 'handled';
}

/** An edited reply changes its steer while it is still queued. */
async function handleEdit(context: SlackContext, teamId: string, identity: SlackIdentity, event: MessageEvent): Promise<void> {
  const message = event.message;
  if (!message || message.bot_id || !message.user || message.user === identity.botUserId) return;
  const key = slackMessageKey(teamId, event.channel, message.ts);
  const edited = await context.stores.steers.edit(key, stripMention(message.text ?? '', identity.botUserId));
  if (edited) context.log.info({ key }, 'slack-steer-edited');
}

/** A deleted reply withdraws its steer while it is still queued. */
async function handleDelete(context: SlackContext, teamId: string, event: MessageEvent): Promise<void> {
  if (!event.deleted_ts) return;
  const key = slackMessageKey(teamId, event.channel, event.deleted_ts);
  if (await context.stores.steers.withdraw(key)) context.log.info({ key }, 'slack-steer-withdrawn');
}

/** A direct message with Hippo (a DM channel id starts with D). */
function isDirect(event: MessageEvent): boolean {
  return event.channel_type === 'im' || event.channel.startsWith('D');
}

function isFromBot(identity: SlackIdentity, event: MessageEvent): boolean {
  return Boolean(event.bot_id) || !event.user || event.user === identity.botUserId || event.subtype === 'bot_message';
}

/** Removes the bot's own mention (`<@U123>` or `<@U123|hippo>`) and tidies the spaces left. */
export function stripMention(text: string, botUserId: string): string {
  return text.replace(new RegExp(`<@${botUserId}(\\|[^>]*)?>`, 'g'), ' ').replace(/[ \t]{2,}/g, ' ').trim();
}

/** The first steer of a session started inside an existing thread: the thread so far, then the request. */
export function withHistory(history: string, request: string): string {
  return `[The thread so far, before I was mentioned]\n${history}\n[End of the thread so far]\n\n${request}`;
}

/**
 * Serialises work on the same Slack message within this process: app_mention and message often
 * arrive together, and the second must see what the first stored (one thread read, one session).
 */
const inFlight = new KeyedQueue();
