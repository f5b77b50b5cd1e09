// 👍 / 👎 that people put on Hippo's answers in Discord (MESSAGE_REACTION_ADD, which needs the
// Guild Message Reactions and Direct Message Reactions intents): recorded as answer feedback when
// the message is one of Hippo's answers and the person may use Hippo. The member's roles come with
// the event (discord.js caches the member from it).
import type { MessageReaction, PartialMessageReaction, PartialUser, User } from 'discord.js';
import { feedbackKind, recordAnswerFeedback, type FeedbackListener } from '../chat/answer-feedback.js';
import type { FeedbackStore } from '../storage/feedback-store.js';
import type { DiscordContext } from './context.js';

/** Handles messageReactionAdd. */
export class DiscordReactions {
  constructor(
    private readonly context: DiscordContext,
    private readonly feedback: FeedbackStore,
    private readonly onFeedback: FeedbackListener,
  ) {}

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
