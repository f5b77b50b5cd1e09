// R23's card, the same words on every platform: the exact call (a shell command as it will run,
// any other tool with its arguments), who asked for the run, who may decide and until when; then,
// once decided, who decided what and when. Everything the model wrote is shown as code, capped,
// with backticks defused so it cannot close its block; a cut says how much is not shown.
import type { ApprovalRecord } from '../../core/approval-store.js';

/** Characters of a call a card shows (Slack's section text takes 3,000; Discord's message 2,000). */
export const cardCallChars = 1_500;

/** The call as a person reads it: `shell` shows its command, any other tool its arguments as JSON. */
export function approvalCallText(approval: Pick<ApprovalRecord, 'tool' | 'arguments'>): string {
  let shown = approval.arguments;
  try {
    const parsed: unknown = JSON.parse(approval.arguments);
    if (approval.tool === 'shell' && isRecord(parsed) && typeof parsed['command'] === 'string') {
      const timeout = typeof parsed['timeout_seconds'] === 'number' ? `\n# time limit ${parsed['timeout_seconds']} s` : '';
      shown = `${parsed['command']}${timeout}`;
    } else shown = JSON.stringify(parsed, null, 2);
  } catch {
    // Not JSON: shown as the model sent it (the tool will refuse it anyway).
  }
  return shown;
}

/** A code block of `text`, capped, that nothing inside can close early; plus a line when cut. */
export function codeBlock(text: string, limit = cardCallChars): string {
  const cut = text.length > limit;
  // A zero-width space between backticks keeps a ``` inside from ending the block.
  const body = (cut ? text.slice(0, limit) : text).replace(/`/g, '`\u200b');
  const note = cut ? `\n⚠️ Only the first ${limit.toLocaleString('en-US')} of ${text.length.toLocaleString('en-US')} characters are shown: deny it if you cannot see what it does.` : '';
  return `\`\`\`\n${body}\n\`\`\`${note}`;
}

/** The card's heading while it waits. */
export function approvalHeading(approval: ApprovalRecord, destructive: boolean): string {
  const asked = approval.requestedBy ? ` for ${approval.requestedBy}'s request` : '';
  const warning = destructive ? ' (its server marks it destructive)' : '';
  return `✋ Hippo wants to run \`${approval.tool}\`${warning}${asked}. Approve?`;
}

/** Who may decide, and until when (UTC, minutes). */
export function approvalFooter(approval: ApprovalRecord): string {
  return `The session's starter, an admin or an approver decides. Unanswered, it is denied at ${approval.expiresAt.toISOString().slice(11, 16)} UTC.`;
}

/** The line that replaces the buttons once decided. */
export function approvalOutcomeLine(approval: ApprovalRecord): string {
  const at = approval.decidedAt ? ` at ${approval.decidedAt.toISOString().slice(11, 16)} UTC` : '';
  const by = approval.decidedByName ?? 'someone';
  switch (approval.status) {
    case 'approved':
      return approval.scope === 'run'
        ? `✅ Approved by ${by}${at}, with \`${approval.tool}\` for the rest of this run.`
        : `✅ Approved by ${by}${at}.`;
    case 'denied':
      return `🚫 Denied by ${by}${at}${approval.note ? `: "${approval.note}"` : ''}.`;
    case 'expired':
      return `⌛ Nobody decided in time${at}: denied.`;
    case 'cancelled':
      return `⏹️ Not run: ${approval.note ?? 'stopped'}${at}.`;
    case 'pending':
      return '✋ Waiting for a decision.';
  }
}

/** What a person is told when their click changed nothing (only they see it). */
export function alreadyDecidedText(approval: ApprovalRecord | null): string {
  if (!approval) return 'This approval no longer exists.';
  if (approval.status === 'pending') return 'This call can no longer be approved: its time ran out.';
  return `Already decided: ${approvalOutcomeLine(approval)}`;
}

/** The refusal for someone who may not decide. */
export const approvalRefusal = "Only the person who started this session, an admin or an approver (`APPROVERS`) may approve or deny Hippo's tool calls here; nothing was changed.";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `status`'s record of the latest approvals: what, and who decided what when (empty: none yet). */
export function approvalStatusLines(approvals: readonly ApprovalRecord[]): string[] {
  return approvals.map((approval) => {
    const asked = approval.createdAt.toISOString().slice(0, 16).replace('T', ' ');
    const call = approvalCallText(approval).replace(/\s+/g, ' ');
    const shown = call.length > 80 ? `${call.slice(0, 79)}…` : call;
    return `\`${approval.tool}\` ${shown.replace(/`/g, "'")} (asked ${asked} UTC): ${approvalOutcomeLine(approval)}`;
  });
}
