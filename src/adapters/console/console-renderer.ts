// Turns one thread's agent events into terminal output: the streamed answer, compact tool lines,
// notes, what the agent is waiting for, and whether a message typed during a run was queued and
// when the agent took it.
import type { AgentEvent } from '../../core/events.js';
import type { ConsoleOutput } from './console-output.js';
import type { ChatRenderer } from '../chat/chat-adapter.js';

/** Renders the events of the session shown in this terminal. */
export class ConsoleRenderer implements ChatRenderer {
  private running = false;
  private openToolCalls = 0;
  /** Steers announced as queued, shown again when taken. */
  private readonly queued = new Set<number>();
  private sawInput = false;
  private announcedResume = false;

  constructor(private readonly output: ConsoleOutput) {}

  /** The person typed something: a run starting now is theirs, not a resumed one. */
  noteInput(): void {
    this.sawInput = true;
  }

  /** Prints what one event shows (the caller passes only this terminal's session's events). */
  handle(event: AgentEvent): void {
    const out = this.output;
    switch (event.type) {
      case 'run-start':
        if (!this.sawInput && !this.announcedResume) {
          // Nothing typed yet, and a run starts: recovery picked up work left by the last process.
          this.announcedResume = true;
          out.line('  ↻ resuming the task that was interrupted');
        }
        this.running = true;
        this.openToolCalls = 0;
        out.setStatus('thinking');
        break;
      case 'run-end':
        this.running = false;
        out.setStatus(undefined);
        out.endStream();
        if (event.reason === 'stopped') out.line(`  ⏹ stopped by ${event.stoppedBy ?? 'someone'} (/resume to continue)`);
        break;
      case 'steer-received':
        if (this.running) {
          this.queued.add(event.steer.id);
          out.line('  ↳ queued, will be read at the next step');
        }
        break;
      case 'steer-taken': {
        const mine = event.steers.filter((steer) => this.queued.delete(steer.id));
        if (mine.length > 0) out.line(`  ↳ taken: ${mine.map((steer) => quote(steer.text)).join(', ')}`);
        out.setStatus('thinking');
        break;
      }
      case 'text-delta':
        out.stream(event.delta);
        break;
      case 'assistant-message':
        out.endStream();
        break;
      case 'tool-call-start':
        this.openToolCalls += 1;
        out.setStatus(undefined);
        out.line(`  ⚙ ${event.call.function.name} ${truncate(event.call.function.arguments, 80)}`);
        out.setStatus(`running ${event.call.function.name}`);
        break;
      case 'tool-call-end':
        this.openToolCalls = Math.max(0, this.openToolCalls - 1);
        out.line(`  ${event.ok ? '✓' : '✗'} ${truncate(event.result.replace(/\s+/g, ' '), 100)}`);
        // All tools of the step answered: the next thing is the model reading their results.
        if (this.openToolCalls === 0 && this.running) out.setStatus('thinking');
        break;
      case 'memory-updated':
        out.line(`  🧠 memory updated · ${event.changes.map((change) => `${change.path} +${change.added} −${change.removed}`).join(' · ')}`);
        break;
      case 'context-reset':
        out.line(`  ♻️ context reset · ${Math.round(event.tokensBefore / 1000)}k → ${Math.round(event.tokensAfter / 1000)}k tokens · ${event.carriedMessages} messages carried over`);
        break;
      case 'memory-inherited':
        out.line(`  🧠 ${event.inThread ? 'another thread' : 'someone outside this thread'} (${event.by}) changed MAIN.md since; now v${event.version} (/memory shows it)`);
        break;
      case 'memory-run-failed':
        out.line(`  ⚠ ${event.role} failed: ${event.error}`);
        break;
      case 'paused':
        out.setStatus(undefined);
        out.line('  ⏸ paused (/resume to continue)');
        break;
      case 'step-limit':
        // R21: after the 'paused' line, why, and how to go on.
        out.setStatus(undefined);
        out.line(`  ⏸ stopped after ${event.steps} steps (model calls) without finishing, the limit for one run (RUN_MAX_STEPS): type a reply or /resume to continue`);
        break;
      case 'resumed':
        out.line('  ▶ resumed');
        break;
      case 'error':
        out.setStatus(undefined);
        out.line(`  ✗ ${event.error.message} (/resume to try again)`);
        break;
      default:
        break;
    }
  }
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function quote(text: string): string {
  return `“${truncate(text.replace(/\s+/g, ' '), 40)}”`;
}
