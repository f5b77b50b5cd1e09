// Slack's feedback buttons (👍 / 👎) at the end of an answer's last message: a `context_actions`
// block with a `feedback_buttons` element, sent with the chat.stopStream that ends a stream, or
// after a `markdown` block holding the text where the answer is posted or edited (Slack takes no
// `blocks` beside `markdown_text`). A click is recorded like a 👍 / 👎 reaction (answer_feedback,
// hippo_answer_feedback_total): once per person, answer and kind.
import { recordAnswerFeedback, type FeedbackKind, type FeedbackListener } from '../chat/answer-feedback.js';
import type { Json } from './message-views.js';
import type { BlockActionBody } from './payloads.js';
import type { SlackContext } from './context.js';
import { slackMarkdown } from './slack-text.js';

export const feedbackActionId = 'hippo_feedback';

/**
 * An answer's text and its buttons as blocks: a `markdown` block (standard Markdown, Slack's `<…>`
 * syntax escaped; slackAnswerParts keeps it within Slack's 12,000 characters) and the feedback block.
 */
export function answerBlocks(markdown: string): Array<{ [key: string]: Json }> {
  return [{ type: 'markdown', text: slackMarkdown(markdown) }, feedbackBlock()];
}

/** The block that ends an answer. */
export function feedbackBlock(): { [key: string]: Json } {
  return {
    type: 'context_actions',
    elements: [{
      type: 'feedback_buttons', action_id: feedbackActionId,
      positive_button: { text: { type: 'plain_text', text: '👍' }, value: 'up', accessibility_label: 'This answer helped' },
      negative_button: { text: { type: 'plain_text', text: '👎' }, value: 'down', accessibility_label: 'This answer did not help' },
    }],
  };
}

/** Records a click (the person's access was checked by the caller); a forged value or message is ignored. */
export async function recordFeedbackClick(context: SlackContext, click: BlockActionBody, teamId: string, value: string, onFeedback: FeedbackListener): Promise<void> {
  const kind: FeedbackKind | null = value === 'up' || value === 'down' ? value : null;
  if (!kind || !click.channel || !click.message) return;
  const reaction = { platform: 'slack' as const, workspaceId: teamId, channelId: click.channel.id, messageId: click.message.ts, userId: click.user.id, kind };
  // Only a message the outbox sent as an answer counts (the store checks), as for reactions.
  if (!(await recordAnswerFeedback(context.feedback, reaction))) return;
  onFeedback('slack', kind);
  context.log.info({ teamId, channelId: reaction.channelId, ts: reaction.messageId, kind }, 'slack-answer-feedback');
}
