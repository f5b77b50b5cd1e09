// R23: the card's buttons on Slack. The clicker must be allowed to decide (the session's starter,
// an admin, or APPROVERS); anyone else is told so only they see it, and nothing changes. A click
// that comes twice, on two replicas or after the call was decided changes nothing either: the
// agent's conditional update decides once, and the late clicker is told what was decided.
import { z } from 'zod';
import type { ApprovalChoice } from '../../core/approval-store.js';
import { alreadyDecidedText, approvalRefusal } from '../chat/approval-card.js';
import { approvalActionIds } from './approval-views.js';
import { slackPlatform, type SlackContext } from './context.js';
import { postEphemeral } from './ephemeral.js';
import type { BlockActionBody } from './payloads.js';

const approvalId = z.string().uuid();

const choices: Record<string, ApprovalChoice> = {
  [approvalActionIds.approve]: 'approve',
  [approvalActionIds.approveRun]: 'approve-run',
  [approvalActionIds.deny]: 'deny',
};

/** Decides the approval a card button names, if the clicker may. */
export async function handleApprovalAction(context: SlackContext, click: BlockActionBody, teamId: string, actionId: string, value: string): Promise<void> {
  const choice = choices[actionId];
  const id = approvalId.safeParse(value);
  const approval = id.success ? await context.stores.approvals.get(id.data) : null;
  const session = approval ? await context.stores.sessions.get(approval.sessionId) : null;
  // A forged or foreign value: another platform's or another workspace's call is never decided here.
  if (!choice || !approval || !session || session.platform !== slackPlatform || session.workspaceId !== teamId) {
    context.log.warn({ actionId, userId: click.user.id }, 'slack-approval-unknown');
    return reply(context, click, teamId, 'This button no longer works: the call it asked about is gone.');
  }
  if (!(await context.access.mayApprove(context.people.requester(teamId, click.user.id), session))) {
    context.log.info({ sessionId: session.id, approvalId: approval.id, userId: click.user.id }, 'slack-approval-refused');
    return reply(context, click, teamId, approvalRefusal);
  }
  const name = await context.people.name(teamId, click.user.id);
  const result = await context.agent.decideApproval(approval.id, choice, { id: click.user.id, name });
  if (!result.decided) await reply(context, click, teamId, alreadyDecidedText(result.approval));
}

async function reply(context: SlackContext, click: BlockActionBody, teamId: string, text: string): Promise<void> {
  if (!click.channel || !click.message) return;
  await postEphemeral(context, { teamId, channelId: click.channel.id, userId: click.user.id, threadTs: click.message.thread_ts ?? click.message.ts }, text);
}
