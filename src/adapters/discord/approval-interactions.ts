// R23: the card's buttons on Discord (answered ephemerally, after the interaction was deferred).
// Only the session's starter, an admin or an approver decides; anyone else is told so and nothing
// changes. A click delivered twice, on two replicas or after the decision changes nothing either:
// the agent's conditional update decides once, and the late clicker is told what was decided.
import type { ApprovalChoice } from '../../core/approval-store.js';
import type { SessionRecord } from '../../core/store.js';
import type { Requester } from '../chat/access-policy.js';
import { alreadyDecidedText, approvalOutcomeLine, approvalRefusal } from '../chat/approval-card.js';
import type { DiscordContext } from './context.js';
import type { ButtonAction, ButtonId } from './ids.js';

const choices: Partial<Record<ButtonAction, ApprovalChoice>> = { approve: 'approve', approverun: 'approve-run', deny: 'deny' };

/** True for the card's buttons. */
export function isApprovalButton(action: ButtonAction): boolean {
  return choices[action] !== undefined;
}

/** Decides the approval the button names, if the clicker may; returns what the clicker is told. */
export async function decideFromButton(context: DiscordContext, requester: Requester, actor: { userId: string; name: string }, session: SessionRecord, id: ButtonId): Promise<string> {
  const choice = choices[id.action];
  const approval = id.memoryRunId && /^[0-9a-f-]{36}$/.test(id.memoryRunId) ? await context.stores.approvals.get(id.memoryRunId) : null;
  // A forged id: another session's call is never decided from this one's card.
  if (!choice || !approval || approval.sessionId !== session.id || session.platform !== 'discord') return 'This button no longer works: the call it asked about is gone.';
  if (!(await context.access.mayApprove(requester, session))) {
    context.log.info({ sessionId: session.id, approvalId: approval.id, userId: actor.userId }, 'discord-approval-refused');
    return approvalRefusal;
  }
  const result = await context.agent.decideApproval(approval.id, choice, { id: actor.userId, name: actor.name });
  if (!result.decided || !result.approval) return alreadyDecidedText(result.approval);
  return approvalOutcomeLine(result.approval);
}
