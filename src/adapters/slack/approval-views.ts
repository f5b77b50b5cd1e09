// R23's card on Slack: the exact call as code, who asked, and Approve / Deny / "Approve `tool` for
// this run"; once decided, the same message without buttons, saying who decided what and when.
// Everything from the model or a person is escaped for mrkdwn (no mention, no link can be forged).
import type { ApprovalRecord } from '../../core/approval-store.js';
import { approvalCallText, approvalFooter, approvalHeading, approvalOutcomeLine, codeBlock } from '../chat/approval-card.js';
import { button, escapeMrkdwn, section, type Json, type SlackMessageBody } from './message-views.js';

/** The action ids of the card's buttons (the value is the approval's id). */
export const approvalActionIds = {
  approve: 'hippo_approval_approve',
  approveRun: 'hippo_approval_approve_run',
  deny: 'hippo_approval_deny',
} as const;

/** True for the card's buttons. */
export function isApprovalAction(actionId: string): actionId is (typeof approvalActionIds)[keyof typeof approvalActionIds] {
  return Object.values(approvalActionIds).some((id) => id === actionId);
}

/** The card while the call waits. */
export function approvalCard(approval: ApprovalRecord, destructive: boolean): SlackMessageBody {
  const heading = approvalHeading(approval, destructive);
  const blocks: Json[] = [
    section(escapeMrkdwn(heading)),
    section(escapeMrkdwn(codeBlock(approvalCallText(approval)))),
    {
      type: 'actions',
      block_id: 'hippo_approval',
      elements: [
        button('Approve', approvalActionIds.approve, approval.id, 'primary'),
        button('Deny', approvalActionIds.deny, approval.id, 'danger'),
        button(`Approve ${approval.tool.slice(0, 40)} for this run`, approvalActionIds.approveRun, approval.id),
      ],
    },
    { type: 'context', elements: [{ type: 'mrkdwn', text: escapeMrkdwn(approvalFooter(approval)) }] },
  ];
  return { text: heading, blocks };
}

/** The card once decided: the call stays, the buttons give way to the outcome. */
export function decidedApprovalCard(approval: ApprovalRecord): SlackMessageBody {
  const outcome = approvalOutcomeLine(approval);
  return {
    text: outcome,
    blocks: [
      section(escapeMrkdwn(`\`${approval.tool}\``)),
      section(escapeMrkdwn(codeBlock(approvalCallText(approval)))),
      section(escapeMrkdwn(outcome)),
    ],
  };
}
