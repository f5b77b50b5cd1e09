// 👍 / 👎 on Hippo's answers (answer_feedback): the statement that records one, found by the
// answer's platform message id among the outbox's sent items.
import type { PrismaClient } from '../../../prisma/generated/client.js';

/** A reaction on a message, as stored. */
export interface FeedbackRow {
  platform: 'slack' | 'discord';
  workspaceId: string;
  channelId: string;
  /** The platform message id (Slack ts, Discord message id). */
  messageId: string;
  userId: string;
  kind: 'up' | 'down';
}

/** The answer_feedback table. */
export class FeedbackStore {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Stores the reaction when it is on a sent outbox item whose key starts with `answerKeyPrefix`
   * (an answer Hippo posted; sent items are kept 14 days); true when it was new.
   */
  async record(reaction: FeedbackRow, answerKeyPrefix: string): Promise<boolean> {
    const pattern = `${answerKeyPrefix}%`;
    const inserted = await this.prisma.$executeRaw`
      INSERT INTO answer_feedback (platform, workspace_id, channel_id, message_id, session_id, user_id, kind)
      SELECT ${reaction.platform}, ${reaction.workspaceId}, ${reaction.channelId}, ${reaction.messageId}, o.session_id, ${reaction.userId}, ${reaction.kind}
      FROM outbox o
      WHERE o.platform_message_id = ${reaction.messageId} AND o.platform = ${reaction.platform} AND o.idempotency_key LIKE ${pattern}
        -- A Slack ts is unique within its channel only.
        AND (o.platform <> 'slack' OR o.payload->>'channel' = ${reaction.channelId})
      LIMIT 1
      ON CONFLICT (platform, channel_id, message_id, user_id, kind) DO NOTHING`;
    return inserted > 0;
  }
}
