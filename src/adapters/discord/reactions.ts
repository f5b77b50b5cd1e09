// 👍 / 👎 that people put on Hippo's answers in Discord (MESSAGE_REACTION_ADD, which needs the
// Guild Message Reactions and Direct Message Reactions intents): recorded as answer feedback when
// the message is one of Hippo's answers and the person may use Hippo. The member's roles come with
// the event (discord.js caches the member from it).
import { Events, type Client, type MessageReaction, type PartialMessageReaction, type PartialUser, type User } from 'discord.js';
import type { ChatReactions } from '../chat/chat-adapter.js';
import { feedbackKind, recordAnswerFeedback, type FeedbackListener } from '../chat/answer-feedback.js';
import type { FeedbackStore } from '../storage/feedback-store.js';
import { servedHere, type DiscordContext } from './context.js';

/** Handles messageReactionAdd. */
export class DiscordReactions implements ChatReactions<Client> {
  constructor(
    private readonly context: DiscordContext,
    private readonly feedback: FeedbackStore,
    private readonly onFeedback: FeedbackListener,
  ) {}

  /** Listens to messageReactionAdd of the servers Hippo works in. */
  register(client: Client): void {
    client.on(Events.MessageReactionAdd, (reaction, user) => {
      if (!servedHere(this.context, reaction.message.guildId)) return;
      this.added(reaction, user).catch((error: unknown) => this.context.log.error({ err: error, messageId: reaction.message.id }, 'discord-reaction-failed'));
    });
  }

  /** A reaction was added to a message (cached or not). */
  async added(reaction: MessageReaction | PartialMessageReaction, user: User | PartialUser): Promise<void> {
    const kind = feedbackKind(reaction.emoji.name ?? '');
    if (!kind || user.bot || user.id === this.context.client.user?.id) return;
    const { message } = reaction;
    const member = message.guild?.members.cache.get(user.id);
    const requester = { userId: user.id, inGroup: async (roleId: string) => member?.roles.cache.has(roleId) ?? false };
    if (!(await this.context.access.maySteer(requester)).allowed) return;
    const recorded = await recordAnswerFeedback(this.feedback, {
      platform: 'discord', workspaceId: message.guildId ?? '@me', channelId: message.channelId, messageId: message.id, userId: user.id, kind,
    });
    if (!recorded) return;
    this.onFeedback('discord', kind);
    this.context.log.info({ channelId: message.channelId, messageId: message.id, kind }, 'discord-answer-feedback');
  }
}
