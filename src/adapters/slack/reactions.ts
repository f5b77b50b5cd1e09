// 👍 / 👎 that people put on Hippo's answers in Slack (reaction_added): recorded as answer
// feedback when the message is one of Hippo's answers and the person may use Hippo.
import { z } from 'zod';
import { feedbackKind, recordAnswerFeedback, type FeedbackListener } from '../chat/answer-feedback.js';
import { eventEnvelope } from './payloads.js';
import type { SlackContext } from './context.js';
import type { SlackListeners } from './routes.js';
import type { ChatReactions } from '../chat/chat-adapter.js';

const reactionAdded = z.looseObject({
  user: z.string(),
  reaction: z.string(),
  item_user: z.string().optional(),
  item: z.looseObject({ type: z.string(), channel: z.string().optional(), ts: z.string().optional() }),
});

/** Handles reaction_added; `onFeedback` hears each new 👍 / 👎 (the metrics counter). */
export class SlackReactions implements ChatReactions<SlackListeners> {
  constructor(
    private readonly context: SlackContext,
    private readonly onFeedback: FeedbackListener,
  ) {}

  /** Puts the reaction_added handler on the routes. */
  register({ routes }: SlackListeners): void {
    const { context, onFeedback } = this;
    routes.event('reaction_added', async ({ event, body }) => {
      const envelope = eventEnvelope.safeParse(body);
      const parsed = reactionAdded.safeParse(event);
      if (!envelope.success || !parsed.success) return;
      const { user, reaction, item, item_user: author } = parsed.data;
      const kind = feedbackKind(reaction);
      const teamId = envelope.data.team_id;
      if (!kind || item.type !== 'message' || !item.channel || !item.ts) return;
      // Only messages the bot wrote can be answers: everything else costs no statement.
      const workspace = await context.workspaces.get(teamId);
      if (!workspace || author !== workspace.identity.botUserId) return;
      if (!(await context.access.maySteer(context.people.requester(teamId, user))).allowed) return;
      const recorded = await recordAnswerFeedback(context.feedback, { platform: 'slack', workspaceId: teamId, channelId: item.channel, messageId: item.ts, userId: user, kind });
      if (!recorded) return;
      onFeedback('slack', kind);
      context.log.info({ teamId, channelId: item.channel, ts: item.ts, kind }, 'slack-answer-feedback');
    });
  }
}
