// The state shown on a run's status card, folded from agent events. Pure, so every platform renders
// the same states (thinking / running tool X / waiting / paused / done / error).
import type { AgentEvent, StopReason } from '../../core/events.js';
import { errorKind } from './notes.js';
import { planTool, todoContent } from './task-list.js';

/** What the run is doing now. */
export type RunPhase =
  | 'thinking' | 'tool' | 'waiting'
  /** R23: a tool call waits for a person to approve or deny it (`tool` names it). */
  | 'approval' | 'paused' | 'resumed' | 'resetting' | 'done' | 'error' | 'stopped' | 'stalled' | 'budget'
  /** R21: the run took its step limit and waits, paused, for a reply or resume. */
  | 'steps'
  /** A person pressed Stop: cancelling now ('stopping'), then stopped until a reply or resume ('halted'). */
  | 'stopping' | 'halted';

/** One card's state. Times are epoch milliseconds. */
export interface RunStatus {
  phase: RunPhase;
  /** The tool running now (phase 'tool'). */
  tool: string | null;
  /** Tool calls so far, counted as the checklist and task cards count them (a TODO.md write is the plan, not a call). */
  toolCalls: number;
  startedAt: number;
  endedAt: number | null;
  /** Context use in percent of the window, when known. */
  contextPercent: number | null;
  /**
   * The error's code ('model', 'tool', …), never its text: a provider's message can quote a key
   * or a URL with credentials, and the card is public (the log has the text).
   */
  error: string | null;
  /** Who pressed Stop (phases 'stopping' and 'halted'). */
  stoppedBy: string | null;
}

/** A card's first state, at run-start. */
export function startRunStatus(now: number): RunStatus {
  return { phase: 'thinking', tool: null, toolCalls: 0, startedAt: now, endedAt: null, contextPercent: null, error: null, stoppedBy: null };
}

/** The state after an event; unchanged (same object) when the event does not concern the card. */
export function applyRunEvent(status: RunStatus, event: AgentEvent, now: number): RunStatus {
  switch (event.type) {
    case 'tool-call-start':
      return { ...status, phase: 'tool', tool: event.call.function.name, toolCalls: status.toolCalls + (event.call.function.name === planTool ? 0 : 1) };
    case 'tool-call-end': {
      // A TODO.md write that failed (or cannot be read) shows as a call of its own (task-list.ts).
      const planAsCall = event.call.function.name === planTool && !(event.ok && todoContent(event.call) !== null);
      const counted = planAsCall ? { ...status, toolCalls: status.toolCalls + 1 } : status;
      return counted.phase === 'tool' || counted.phase === 'approval' ? { ...counted, phase: 'thinking', tool: null } : counted;
    }
    case 'approval-requested':
      return isActive(status) ? { ...status, phase: 'approval', tool: event.approval.tool } : status;
    case 'approval-decided':
      if (status.phase !== 'approval') return status;
      return event.approval.status === 'approved' ? { ...status, phase: 'tool' } : { ...status, phase: 'thinking', tool: null };
    case 'pause-requested':
      return isActive(status) ? { ...status, phase: 'waiting', tool: null } : status;
    case 'stop-requested':
      return isStoppable(status) ? { ...status, phase: 'stopping', tool: null, stoppedBy: event.by } : status;
    case 'paused':
      return { ...status, phase: 'paused', tool: null, endedAt: status.endedAt ?? now };
    case 'resumed':
      if (status.phase === 'waiting') return { ...status, phase: 'thinking' };
      return status.phase === 'paused' || status.phase === 'steps' || status.phase === 'error' ? { ...status, phase: 'resumed' } : status;
    case 'error':
      return { ...status, phase: 'error', tool: null, error: event.error.code, endedAt: now };
    case 'run-end':
      return endRun(event.reason === 'stopped' ? { ...status, stoppedBy: event.stoppedBy ?? status.stoppedBy } : status, event.reason, now);
    default:
      return status;
  }
}

/**
 * The card's phase after a run ended for each reason; any other (shutdown, the session moved to
 * another replica) stops this card while work goes on.
 */
const phaseAfter: Partial<Record<StopReason, RunPhase>> = {
  idle: 'done', paused: 'paused', reset: 'resetting', error: 'error', storage: 'stalled', budget: 'budget', stopped: 'halted', 'step-limit': 'steps',
};

function endRun(status: RunStatus, reason: StopReason, now: number): RunStatus {
  return { ...status, tool: null, endedAt: status.endedAt ?? now, phase: phaseAfter[reason] ?? 'stopped' };
}

/** True while the run works (a Pause button makes sense). */
export function isActive(status: RunStatus): boolean {
  return status.phase === 'thinking' || status.phase === 'tool' || status.phase === 'approval';
}

/** True while a Stop button makes sense: something runs, or waits for a safe point to pause. */
export function isStoppable(status: RunStatus): boolean {
  return isActive(status) || status.phase === 'waiting';
}

/** True when a Resume button makes sense. */
export function isResumable(status: RunStatus): boolean {
  return status.phase === 'paused' || status.phase === 'steps' || status.phase === 'waiting' || status.phase === 'error' || status.phase === 'halted';
}

/** "1m 05s", "12s". */
export function formatElapsed(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

/** The card's line, e.g. "🔧 Running tool `web_fetch` · 12s · context 34%". */
export function runStatusLine(status: RunStatus, now: number): string {
  const parts = [phaseText(status)];
  parts.push(formatElapsed((status.endedAt ?? now) - status.startedAt));
  if (status.toolCalls > 0) parts.push(`${status.toolCalls} tool call${status.toolCalls === 1 ? '' : 's'}`);
  if (status.contextPercent !== null) parts.push(`context ${status.contextPercent}%`);
  return parts.join(' · ');
}

/** A few words for the platform's own "is typing"-style indicator; empty when the run is over. */
export function runIndicatorText(status: RunStatus): string {
  if (status.phase === 'thinking') return 'is thinking…';
  if (status.phase === 'tool') return `is running ${status.tool ?? 'a tool'}…`;
  if (status.phase === 'approval') return `is waiting for approval of ${status.tool ?? 'a tool'}…`;
  return '';
}

/**
 * What the platform's loading indicator rotates through while the run works (Slack's
 * `loading_messages`): the tool running now, or thinking and how many tool calls so far.
 */
export function runLoadingMessages(status: RunStatus): string[] {
  if (status.phase === 'tool') return [`Running ${status.tool ?? 'a tool'}…`];
  if (status.phase === 'approval') return [`Waiting for approval of ${status.tool ?? 'a tool'}…`];
  if (status.phase !== 'thinking') return [];
  return status.toolCalls > 0 ? ['Thinking…', `${status.toolCalls} tool call${status.toolCalls === 1 ? '' : 's'} so far`] : ['Thinking…'];
}

function phaseText(status: RunStatus): string {
  switch (status.phase) {
    case 'thinking':
      return '🤔 Thinking';
    case 'tool':
      return `🔧 Running tool \`${status.tool ?? '?'}\``;
    case 'waiting':
      return '⏳ Waiting for a safe point to pause';
    case 'approval':
      return `✋ Waiting for approval: \`${status.tool ?? '?'}\` (see the card below)`;
    case 'paused':
      return '⏸️ Paused';
    case 'resumed':
      return '▶️ Resumed';
    case 'resetting':
      return '♻️ Resetting context';
    case 'done':
      return '✅ Done';
    case 'error':
      return `❌ Error${status.error ? `: ${errorKind(status.error)}` : ''} (details are in the service log)`;
    case 'stopped':
      return '⏹️ Stopped here (the service restarted or handed over); the work continues';
    case 'stalled':
      return '⚠️ Waiting for the database; the work continues by itself when it is back';
    case 'budget':
      return '💸 Stopped: the spend budget is used up';
    case 'steps':
      return '⏸️ Paused at the step limit; a reply or Resume continues';
    case 'stopping':
      return `⏹️ Stopping (${status.stoppedBy ?? 'someone'} pressed Stop)…`;
    case 'halted':
      return `⏹️ Stopped by ${status.stoppedBy ?? 'someone'}; a reply or Resume continues`;
  }
}
