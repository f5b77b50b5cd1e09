// R23 in the terminal chat: a call that waits for a person prints as a card (the exact call, with
// control characters made visible so it cannot redraw the terminal), and the next line answers it:
// `y` approves, `a` approves the tool for the rest of this run, `n [reason]` denies. The terminal's
// user started the session, so they decide; the decision goes through the same conditional update.
import type { Agent } from '../../core/agent.js';
import type { ApprovalChoice, ApprovalRecord } from '../../core/approval-store.js';
import type { AgentEvent } from '../../core/events.js';
import { alreadyDecidedText, approvalCallText, approvalHeading, approvalOutcomeLine, cardCallChars } from '../chat/approval-card.js';
import type { ConsoleOutput } from './output.js';

/** The card and the answers of the calls that wait in this terminal's session. */
export class ConsoleApprovals {
  /** The calls waiting, oldest first (the next answer decides the first). */
  private readonly waiting: ApprovalRecord[] = [];

  constructor(
    private readonly agent: Agent,
    private readonly output: ConsoleOutput,
    private readonly person: { id: string; name: string },
  ) {}

  /** Prints cards and outcomes of this session's approvals. */
  render(event: AgentEvent): void {
    if (event.type === 'approval-requested') {
      if (this.waiting.some((each) => each.id === event.approval.id)) return;
      this.waiting.push(event.approval);
      const call = visible(approvalCallText(event.approval));
      const shown = call.length > cardCallChars ? `${call.slice(0, cardCallChars)}\n  ⚠ only the first ${cardCallChars} of ${call.length} characters are shown` : call;
      this.output.setStatus(undefined);
      this.output.line(`  ${visible(approvalHeading(event.approval, event.destructive))}`);
      this.output.line(shown.split('\n').map((line) => `    │ ${line}`).join('\n'));
      this.output.line(`  y: approve · a: approve ${event.approval.tool} for the rest of this run · n [reason]: deny`);
      this.output.setStatus('waiting for your approval');
    } else if (event.type === 'approval-decided') {
      const index = this.waiting.findIndex((each) => each.id === event.approval.id);
      if (index < 0 && !event.first) return;
      if (index >= 0) this.waiting.splice(index, 1);
      this.output.line(`  ${visible(approvalOutcomeLine(event.approval))}`);
    }
  }

  /** Decides the oldest waiting call when the line is an answer; false when it is not (a message). */
  async answer(line: string): Promise<boolean> {
    const approval = this.waiting[0];
    const match = /^(y|yes|a|n|no)(?:\s+(.*))?$/is.exec(line.trim());
    if (!approval || !match) return false;
    const word = (match[1] ?? '').toLowerCase();
    const choice: ApprovalChoice = word.startsWith('y') ? 'approve' : word === 'a' ? 'approve-run' : 'deny';
    const result = await this.agent.decideApproval(approval.id, choice, this.person, choice === 'deny' ? match[2] : undefined);
    if (!result.decided) {
      this.waiting.shift();
      this.output.line(`  ${visible(alreadyDecidedText(result.approval))}`);
    }
    return true;
  }
}

/** Control characters (escape sequences, carriage returns) shown as � instead of acted on by the terminal. */
function visible(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '�');
}
