// R23's card on Discord: the exact call as code, who asked, and Approve / Deny / "for this run"
// buttons; once decided, the same message without buttons, saying who decided what and when.
// Nobody is pinged by the model's text (no allowed mentions).
import { ButtonStyle, ComponentType, type APIButtonComponentWithCustomId, type RESTPostAPIChannelMessageJSONBody } from 'discord.js';
import type { ApprovalRecord } from '../../core/approval-store.js';
import { approvalCallText, approvalFooter, approvalHeading, approvalOutcomeLine, codeBlock } from '../chat/approval-card.js';
import { buttonId } from './ids.js';

/** Characters of the call a Discord card shows (its message holds 2,000 with the heading and footer). */
const discordCallChars = 1_300;

/** The card while the call waits. */
export function approvalCardBody(approval: ApprovalRecord, destructive: boolean): RESTPostAPIChannelMessageJSONBody {
  const buttons: APIButtonComponentWithCustomId[] = [
    approvalButton('✅', 'Approve', buttonId('approve', approval.sessionId, approval.id), ButtonStyle.Success),
    approvalButton('🚫', 'Deny', buttonId('deny', approval.sessionId, approval.id), ButtonStyle.Danger),
    approvalButton('🔁', `Approve ${approval.tool.slice(0, 40)} for this run`, buttonId('approverun', approval.sessionId, approval.id), ButtonStyle.Secondary),
  ];
  return {
    content: `${approvalHeading(approval, destructive)}\n${codeBlock(approvalCallText(approval), discordCallChars)}\n-# ${approvalFooter(approval)}`,
    components: [{ type: ComponentType.ActionRow, components: buttons }],
    allowed_mentions: { parse: [] },
  };
}

/** The card once decided: the call stays, the buttons give way to the outcome. */
export function decidedApprovalBody(approval: ApprovalRecord): RESTPostAPIChannelMessageJSONBody {
  return {
    content: `\`${approval.tool}\`\n${codeBlock(approvalCallText(approval), discordCallChars)}\n${approvalOutcomeLine(approval)}`,
    components: [],
    allowed_mentions: { parse: [] },
  };
}

function approvalButton(emoji: string, label: string, customId: string, style: ButtonStyle.Success | ButtonStyle.Danger | ButtonStyle.Secondary): APIButtonComponentWithCustomId {
  return { type: ComponentType.Button, style, custom_id: customId, emoji: { name: emoji }, label };
}
