// 👍 / 👎 on Hippo's answers, the same on every platform: a reaction counts when it is on a message
// the outbox posted as an answer (any part of it), by someone who may use Hippo; each person counts
// once per answer and kind (a redelivered event changes nothing). Stored in answer_feedback and
// counted in hippo_answer_feedback_total{platform,kind}.
import type { FeedbackStore } from '../storage/feedback-store.js';

/** What a reaction says about an answer. */
export type FeedbackKind = 'up' | 'down';

/** Reports stored feedback (the metrics counter). */
export type FeedbackListener = (platform: string, kind: FeedbackKind) => void;

/** Slack names (skin tones allowed) and Unicode emoji of thumbs up and down. */
const kinds: Record<string, FeedbackKind> = { '+1': 'up', thumbsup: 'up', '👍': 'up', '-1': 'down', thumbsdown: 'down', '👎': 'down' };

/** The kind of a reaction, or null for any other emoji. */
export function feedbackKind(reaction: string): FeedbackKind | null {
  // Slack: "+1::skin-tone-3"; Unicode: 👍 followed by a skin-tone modifier (U+1F3FB–U+1F3FF).
  const base = reaction.split('::')[0]?.replace(/[\u{1F3FB}-\u{1F3FF}]/gu, '') ?? '';
  return kinds[base] ?? null;
}

/** A reaction on a message. */
export interface AnswerReaction {
  platform: 'slack' | 'discord';
  workspaceId: string;
  channelId: string;
  /** The platform message id (Slack ts, Discord message id). */
  messageId: string;
  userId: string;
  kind: FeedbackKind;
}

/** Outbox keys of answers, per platform (renderers: "answer:<segment>:<seq>:<part>", "discord:answer:…"). */
const answerKeyPrefix: Record<AnswerReaction['platform'], string> = { slack: 'answer:', discord: 'discord:answer:' };

/**
 * Stores the reaction when it is on an answer Hippo posted; true when it was new. The answer is
 * found by its platform message id among the outbox's sent items (kept 14 days).
 */
export function recordAnswerFeedback(store: FeedbackStore, reaction: AnswerReaction): Promise<boolean> {
  return store.record(reaction, answerKeyPrefix[reaction.platform]);
}
