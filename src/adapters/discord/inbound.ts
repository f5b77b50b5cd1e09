// Inbound Discord messages (docs/product.md "Using it"): a mention in a text channel starts a
// thread and a session bound to it; a mention in a thread without a session starts one that first
// reads the thread; a DM is a session; every person's message in a session thread is a steer
// message; "@Hippo status" and friends are commands. Edits and deletes of queued steers update or
// withdraw them. Duplicate deliveries (gateway replays, a second replica) are dropped durably: the
// unique steer key, and the event log for commands.
import { AttachmentBuilder, DiscordAPIError, Events, type Client, RESTJSONErrorCodes, ThreadAutoArchiveDuration, type Message, type NewsChannel, type PartialMessage, type TextChannel } from 'discord.js';
import type { SessionRecord, ThreadAddress } from '../../core/store.js';
import { runCommand } from '../chat/command-runner.js';
import { helpText, mentionCommand, textVerbs, type CommandVerb } from '../chat/commands.js';
import { messageRequester, refuseMessage } from './access.js';
import { accessRequestOf } from './memory-access.js';
import { enqueueText, servedHere, type DiscordContext } from './context.js';
import type { ChatInbound } from '../chat/chat-adapter.js';
import { outboxPayload } from './deliver.js';
import { textBodies } from './message-views.js';
import { documentMenus } from './memory-views.js';
import { steerKey, threadAddress, threadName } from './ids.js';
import { discordAttachments } from './files.js';
import { placeOf } from './place.js';
import { Background } from '../chat/background.js';
import { KeyedQueue } from '../chat/keyed-queue.js';
import { authorName, isPersonMessage, mentionsHippo, messageText } from './message-text.js';
import { readThreadSoFar, withThreadHistory } from './thread-history.js';

/** What a message that only shares files says. */
const sharedFileText = '(shared a file)';

/** Handles messageCreate / messageUpdate / messageDelete, in order per channel. */
export class DiscordInbound implements ChatInbound<Client> {
  private readonly queue: KeyedQueue;
  /** Exports: built and sent beside the channel's queue, so the thread's next messages wait for nothing. */
  private readonly exports: Background;

  constructor(private readonly context: DiscordContext) {
    this.queue = new KeyedQueue((error, channelId) => context.log.error({ err: error, channelId }, 'discord-message-failed'));
    this.exports = new Background(context.log);
  }

  /** Listens to messageCreate / messageUpdate / messageDelete of the servers Hippo works in. */
  register(client: Client): void {
    const served = (guildId: string | null) => servedHere(this.context, guildId);
    client.on(Events.MessageCreate, (message) => void (served(message.guildId) && this.created(message)));
    client.on(Events.MessageUpdate, (_old, message) => void (served(message.guildId) && this.updated(message)));
    client.on(Events.MessageDelete, (message) => void (served(message.guildId) && this.deleted(message)));
  }

  /** A new message. */
  created(message: Message): Promise<void> {
    return this.queue.post(message.channelId, () => this.onCreated(message));
  }

  /** An edited message: a still-queued steer takes the new text. */
  updated(message: Message | PartialMessage): Promise<void> {
    return this.queue.post(message.channelId, async () => {
      const botId = this.context.client.user?.id;
      if (!botId || message.partial || !isPersonMessage(message, botId)) return;
      const text = messageText(message, botId);
      if (text === '') return;
      const edited = await this.context.stores.steers.edit(steerKey(message.channelId, message.id), text);
      if (edited) this.context.log.info({ messageId: message.id }, 'discord-steer-edited');
    });
  }

  /** A deleted message: a still-queued steer is withdrawn. */
  deleted(message: Message | PartialMessage): Promise<void> {
    return this.queue.post(message.channelId, async () => {
      const withdrawn = await this.context.stores.steers.withdraw(steerKey(message.channelId, message.id));
      if (withdrawn) this.context.log.info({ messageId: message.id }, 'discord-steer-withdrawn');
    });
  }

  /** Resolves when every message received so far is handled (an export it started sent, too). */
  async idle(): Promise<void> {
    await this.queue.idle();
    await this.exports.settle();
  }

  private async onCreated(message: Message): Promise<void> {
    const { client, agent } = this.context;
    const botId = client.user?.id;
    if (!botId || !isPersonMessage(message, botId)) return;
    const mentioned = mentionsHippo(message, botId);
    const attachments = discordAttachments(message);
    // Files reach the worker as files (saved into the workspace), not as links in the text.
    const text = messageText(message, botId, false);
    // A bare mention asks for help; a mention plus one command word (or remember/forget/pin and
    // their text) is a command.
    const said = mentioned && text === '' && attachments.length === 0 ? { verb: 'help' as const, rest: '' } : mentionCommand(text);
    const place = await placeOf(client, message.channelId, message.channel);
    if (place.kind === 'other' || (place.kind === 'channel' && !mentioned)) return;
    const session = place.kind === 'channel' ? null : await agent.findSession(place.address);
    // Without a session, "remember …" has no context to fork memory from: it is a request then.
    const command = said && (session || !textVerbs.has(said.verb)) ? said : null;
    const { access } = this.context;
    const requester = messageRequester(message);
    // Where no session lives, help and hints are for people who could start one here (ALLOWED_CHANNELS
    // names a thread's parent channel, or `dm`): others get the refusal, not a public answer.
    const mayStart = () => access.mayStart(requester, { channelId: place.kind === 'channel' ? place.channel.id : place.address.channelId, direct: place.kind === 'dm' });
    if (place.kind === 'channel') {
      const start = await mayStart();
      if (!start.allowed) return refuseMessage(this.context, message, start, true);
      if (command) return this.hint(message, command.verb);
      return this.startInChannel(message, place.channel, text || sharedFileText);
    }
    if (place.kind === 'thread' && !session && !mentioned) return; // someone else's thread
    const addressed = mentioned || place.kind === 'dm';
    if (!session) {
      // Here the message is addressed to Hippo (a DM, or a mention in a thread without a session).
      const start = await mayStart();
      if (!start.allowed) return refuseMessage(this.context, message, start, true);
      if (command) return this.hint(message, command.verb);
    }
    if (command && addressed && session) {
      const decision = await access.mayCommand(command.verb, requester, session);
      return decision.allowed ? this.command(message, session, command.verb, command.rest) : refuseMessage(this.context, message, decision, true);
    }
    if (text === '' && attachments.length === 0) return;
    // Files alone are a message too.
    const words = text || sharedFileText;
    if (session) {
      const decision = await access.maySteer(requester);
      return decision.allowed ? this.steer(message, place.address, words, null) : refuseMessage(this.context, message, decision, addressed);
    }
    if (place.kind === 'dm') return this.steer(message, place.address, words, threadName(words));
    const history = await readThreadSoFar(place.thread, message.id, botId).catch((error: unknown) => {
      this.context.log.warn({ err: error, threadId: place.thread.id }, 'discord-thread-history-failed');
      return '';
    });
    return this.steer(message, place.address, withThreadHistory(history, words), threadName(words));
  }

  /** A mention in a text channel: a thread from the message, then the session bound to it. */
  private async startInChannel(message: Message, channel: TextChannel | NewsChannel, text: string): Promise<void> {
    const guildId = channel.guildId;
    // A thread started from a message has the message's id: a redelivered mention finds its session.
    const existing = threadAddress(guildId, channel.id, message.id);
    if (await this.context.agent.findSession(existing)) return this.steer(message, existing, text, null);
    let threadId = message.id;
    try {
      const thread = await message.startThread({ name: threadName(text), autoArchiveDuration: ThreadAutoArchiveDuration.OneDay });
      threadId = thread.id;
    } catch (error) {
      if (!(error instanceof DiscordAPIError) || error.code !== RESTJSONErrorCodes.ThreadAlreadyCreatedForMessage) {
        this.context.log.warn({ err: error, channelId: channel.id }, 'discord-thread-create-failed');
        return enqueueText(this.context, { key: `discord:no-thread:${message.id}`, sessionId: null, channelId: channel.id, replyTo: message.id },
          "I couldn't start a thread here. Please give me the **Create Public Threads** and **Send Messages in Threads** permissions in this channel.");
      }
      threadId = message.thread?.id ?? message.id;
    }
    return this.steer(message, threadAddress(guildId, channel.id, threadId), text, threadName(text));
  }

  /** Queues the message as a steer; `title` set → starts the session if there is none. */
  private async steer(message: Message, address: ThreadAddress, text: string, title: string | null): Promise<void> {
    const incoming = { address, platformMessageKey: steerKey(message.channelId, message.id), authorId: message.author.id, authorName: authorName(message), text, attachments: discordAttachments(message) };
    const { session, inserted } = await this.context.agent.submit(incoming, title === null ? { startSession: false } : { startSession: true, title });
    this.context.log.debug({ messageId: message.id, sessionId: session?.id, inserted }, inserted ? 'discord-steer-queued' : 'discord-steer-duplicate');
  }

  /**
   * A command in a session's thread or DM; the answer goes to the thread (a message has no private
   * answer on Discord: a refusal is a reply to the asker, changing nothing). Runs once per message.
   */
  private async command(message: Message, session: SessionRecord, verb: CommandVerb, rest: string): Promise<void> {
    if (!(await this.context.stores.events.markProcessed(`discord:command:${message.id}`))) return;
    // An export reads a space's whole history: it must not hold up the thread's next messages.
    if (verb === 'export') return this.exports.run('discord-export', () => this.answer(message, session, verb, rest), { messageId: message.id });
    return this.answer(message, session, verb, rest);
  }

  private async answer(message: Message, session: SessionRecord, verb: CommandVerb, rest: string): Promise<void> {
    const request = await accessRequestOf(this.context, message.channelId, message.channel, message.guildId, message.author.id, message.member ? [...message.member.roles.cache.keys()] : []);
    const answer = await runCommand(verb, {
      agent: this.context.agent,
      stores: this.context.stores,
      session,
      actor: { userId: message.author.id, name: authorName(message) },
      prefix: this.prefix(),
      access: async (action) => {
        const space = await this.context.stores.spaces.get(session.memorySpaceId);
        return space ? this.context.memory.check(space, action, request) : { allowed: false, reason: 'This memory space no longer exists.' };
      },
    }, rest);
    const target = { key: `discord:command:${message.id}`, sessionId: session.id, channelId: session.threadKey, ...(answer.private ? { replyTo: message.id } : {}) };
    // The export's bytes are too large for an outbox row: sent now (the command runs once per message).
    if (answer.file) {
      await message.reply({ content: answer.text, files: [new AttachmentBuilder(answer.file.data, { name: answer.file.name })], allowedMentions: { parse: [] } });
      return;
    }
    if (verb !== 'memory' || answer.private) return enqueueText(this.context, target, answer.text);
    // The browser: the list, then menus to choose a document (each choice answers privately).
    const { rows, left } = documentMenus(session.id, await this.context.stores.documents.spaceDocuments(session.memorySpaceId));
    const bodies = textBodies(left > 0 ? `${answer.text}\n(${left} more documents are not in the menus; they are listed above.)` : answer.text);
    for (const [index, body] of bodies.entries()) {
      const last = index === bodies.length - 1;
      await this.context.outbox.enqueue({
        idempotencyKey: `${target.key}:${index + 1}`, sessionId: session.id, platform: 'discord', operation: 'post',
        payload: outboxPayload({ channelId: session.threadKey, body: last && rows.length > 0 ? { ...body, components: rows } : body }),
      });
    }
  }

  /** A command where no session lives: help, or how to start one. */
  private async hint(message: Message, verb: CommandVerb): Promise<void> {
    const text = verb === 'help'
      ? `Mention me with a request to start working on it in a thread, e.g. \`${this.prefix()} summarise this channel\`.\n${helpText(this.prefix())}`
      : `There is no Hippo session here, so \`${verb}\` has nothing to act on. Mention me with a request to start one.`;
    await enqueueText(this.context, { key: `discord:hint:${message.id}`, sessionId: null, channelId: message.channelId, replyTo: message.id }, text);
  }

  private prefix(): string {
    return `@${this.context.client.user?.username ?? 'Hippo'}`;
  }
}
