// Replies only one person sees (chat.postEphemeral), and refusals, which are such replies: a
// refused request stores nothing, so its explanation is sent directly (best effort, after the
// ack), not through the outbox.
import type { AccessDecision } from '../chat/access-policy.js';
import type { SlackContext } from './context.js';
import { workspaceOf } from './context.js';

/** Where an ephemeral reply goes: a person in a channel, in a thread when `threadTs` is set. */
export interface EphemeralTarget {
  teamId: string;
  channelId: string;
  userId: string;
  threadTs?: string | undefined;
}

/** Posts a reply only `target.userId` sees. Throws PlatformError-like errors of the Web API. */
export async function postEphemeral(context: Pick<SlackContext, 'workspaces'>, target: EphemeralTarget, text: string): Promise<void> {
  const { client } = await workspaceOf(context, target.teamId);
  await client.apiCall('chat.postEphemeral', {
    channel: target.channelId, user: target.userId, text, ...(target.threadTs ? { thread_ts: target.threadTs } : {}),
  });
}

/**
 * Logs a refused request and explains it to the person once per `noticeKey` (RefusalNotices),
 * in the background. Stores nothing.
 */
export function refuse(context: SlackContext, target: EphemeralTarget, decision: Extract<AccessDecision, { allowed: false }>, noticeKey: string): void {
  context.log.info({ teamId: target.teamId, channelId: target.channelId, userId: target.userId, rule: decision.rule }, 'slack-request-refused');
  if (!context.refusals.shouldExplain(noticeKey)) return;
  context.background.run('slack-refusal', () => postEphemeral(context, target, decision.message), { rule: decision.rule });
}
