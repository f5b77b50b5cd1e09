// R23: a call the approval policy names waits here for a person. The call's approval is stored
// before anyone is asked (the card is emitted after), so a crash, a restart or a hand-over finds
// it again: the next drive waits on the same row, and whichever process decides it (a click on
// any replica, the timeout, a Stop) does so with one conditional update. Only the worker waits:
// the wait holds no work slot (memory runs go on, R1), steers queue as usual, a Stop ends it at
// once, and a pause or a lost lease leaves it with the call still waiting for the next drive.
import type { AgentDeps } from '../agent-context.js';
import type { ApprovalDecision, ApprovalRecord } from '../approval-store.js';
import type { ToolCall } from '../messages.js';
import type { SessionRecord } from '../store.js';
import type { ApprovalSettings } from '../approval-policy.js';
import type { LiveContext } from './live-context.js';
import { notRunToolResult } from './tool-executor.js';

/** What the worker does with a call: run it, answer it with `content` instead, or leave it waiting. */
export type ApprovalVerdict = { kind: 'run' } | { kind: 'refused'; content: string } | { kind: 'left' };

/** What a wait needs from the drive it is part of. */
export interface ApprovalWaitScope {
  deps: AgentDeps;
  session: () => SessionRecord;
  context: LiveContext;
  /** The drive's signal: a Stop or a shutdown ends the wait at once. */
  signal: AbortSignal;
  stoppedBy: () => string | null;
  /** True when the drive should leave the call waiting (a pause was asked for, the lease was lost). */
  shouldLeave: () => Promise<boolean>;
  /** Runs a slow wait outside the runner's work slot. */
  waiting: <T>(wait: () => Promise<T>) => Promise<T>;
}

/** Longest reason of a denial kept in the tool result. */
const maxNoteChars = 500;
/** Shortest sleep between two looks (the database's clock may be a little behind ours). */
const minSleepMs = 250;

/** One per session runner: waits for people's decisions, woken by `poke`. */
export class ApprovalGate {
  private readonly wakers = new Set<() => void>();

  constructor(private readonly settings: ApprovalSettings | undefined) {}

  /** True when a call of `tool` waits for a person. */
  needs(tool: string): boolean {
    return this.settings?.policy.needs(tool) ?? false;
  }

  /** A decision was stored, or the session's flags changed: waiting drives look again now. */
  poke(): void {
    for (const wake of [...this.wakers]) wake();
  }

  /** Waits until the call may run, is refused, or the drive must leave it waiting. */
  async check(scope: ApprovalWaitScope, call: ToolCall): Promise<ApprovalVerdict> {
    const settings = this.settings;
    const name = call.function.name;
    if (!settings || !settings.policy.needs(name)) return { kind: 'run' };
    const { deps, context } = scope;
    const store = deps.stores.approvals;
    const session = scope.session();
    if (await store.approvedForRun(session.id, session.runStartStep, name)) return { kind: 'run' };
    const holder = context.entries.findLast((entry) => entry.message.role === 'assistant' && entry.message.tool_calls?.some((each) => each.id === call.id));
    if (!holder) return { kind: 'run' };
    let { approval, created } = await store.request({
      sessionId: session.id, segmentId: context.segment.id, messageSeq: holder.seq, callId: call.id, tool: name,
      arguments: call.function.arguments, runStartStep: session.runStartStep, timeoutMs: settings.timeoutMs,
    });
    if (created) deps.log.info({ sessionId: session.id, approvalId: approval.id, tool: name, callId: call.id }, 'approval-requested');
    let announced = false;
    for (;;) {
      if (approval.status !== 'pending') {
        // Decided elsewhere (a click on any replica, or before a restart): the card shows it again, under its key.
        deps.events.emit({ type: 'approval-decided', session: scope.session(), approval, first: false });
        return verdictOf(approval, settings);
      }
      if (!announced) {
        announced = true;
        deps.events.emit({ type: 'approval-requested', session: scope.session(), approval, call, destructive: settings.policy.destructive(name) });
      }
      const stopper = scope.stoppedBy();
      if (stopper !== null) {
        const closed = await this.close(scope, approval, { status: 'cancelled', byId: null, byName: stopper, note: `stopped by ${stopper}` });
        if (closed) return { kind: 'refused', content: notRunToolResult(stopper) };
      } else if (scope.signal.aborted || (await scope.shouldLeave())) {
        return { kind: 'left' };
      } else {
        const remaining = approval.expiresAt.getTime() - deps.clock.now().getTime();
        if (remaining <= 0 && (await this.close(scope, approval, { status: 'expired', byId: null, byName: null, note: `nobody decided within ${formatMinutes(settings.timeoutMs)}` }))) {
          return verdictOf({ ...approval, status: 'expired' }, settings);
        }
        await scope.waiting(() => this.sleep(Math.min(Math.max(remaining, minSleepMs), settings.pollMs), scope.signal));
      }
      const current = await store.get(approval.id);
      if (!current) return { kind: 'left' };
      approval = current;
    }
  }

  /** Closes a pending approval (a Stop, the timeout); true when this update decided it. */
  private async close(scope: ApprovalWaitScope, approval: ApprovalRecord, decision: ApprovalDecision): Promise<boolean> {
    const { decided, approval: after } = await scope.deps.stores.approvals.decide(approval.id, decision);
    if (!decided || !after) return false;
    scope.deps.log.info({ sessionId: after.sessionId, approvalId: after.id, tool: after.tool, status: after.status }, 'approval-decided');
    scope.deps.events.emit({ type: 'approval-decided', session: scope.session(), approval: after, first: true });
    return true;
  }

  /** Resolves after `ms`, on a poke, or when `signal` aborts. */
  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      if (signal.aborted) done();
      else signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** The outcome of a decided approval for the worker: run, or the tool result that says why not. */
function verdictOf(approval: ApprovalRecord, settings: ApprovalSettings): ApprovalVerdict {
  switch (approval.status) {
    case 'approved':
      return { kind: 'run' };
    case 'denied': {
      const note = approval.note?.trim() ? ` Their reason: "${approval.note.trim().slice(0, maxNoteChars)}".` : ' They gave no reason.';
      return { kind: 'refused', content: `Error: not run: ${approval.decidedByName ?? 'a person'} denied this call.${note} Do not try it again unchanged; ask in the thread if it is still needed.` };
    }
    case 'expired':
      return { kind: 'refused', content: `Error: not run: nobody approved this call within ${formatMinutes(settings.timeoutMs)}, so it expired. Ask in the thread if it is still needed.` };
    case 'cancelled':
    case 'pending':
      return { kind: 'refused', content: notRunToolResult(approval.decidedByName ?? 'a person') };
  }
}

/** "30 minutes", "1 minute", "45 seconds". */
export function formatMinutes(ms: number): string {
  if (ms < 60_000) {
    const seconds = Math.max(1, Math.round(ms / 1000));
    return `${seconds} second${seconds === 1 ? '' : 's'}`;
  }
  const minutes = Math.round(ms / 60_000);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}
