// R11: people pause, stop and resume a session. A pause takes effect at the worker's next
// checkpoint (at once when idle); a Stop cancels the model call and tools in flight now; either
// way the session then waits until a steer message or a resume. Only the lease holder pauses:
// when another replica drives, it reads the flags at its next checkpoint (Agent tells it).
import type { AgentDeps } from '../agent-context.js';
import type { ActivityScheduler } from './activity-scheduler.js';
import type { RunStop } from './run-stop.js';
import type { SessionMirror } from './session-mirror.js';

/** What pausing needs of the runner. */
export interface PauseScope {
  deps: Pick<AgentDeps, 'events' | 'stores' | 'log'>;
  mirror: SessionMirror;
  runStop: RunStop;
  scheduler: Pick<ActivityScheduler, 'busy' | 'running' | 'failed' | 'pump' | 'whenIdle'>;
  /** A person acted: what failed for good is tried again. */
  personActed(): void;
  /** The worker may have work (a backlog to go on with). */
  workFound(): void;
}

export class PauseControl {
  constructor(private readonly scope: PauseScope) {}

  /** A person's pause: stored, then carried out at the next checkpoint, or now when idle (resolves then). */
  async pause(): Promise<void> {
    const { deps, mirror, scheduler } = this.scope;
    await this.refreshUnlessDriving();
    scheduler.failed.delete('pause');
    if (mirror.record.paused) return;
    await mirror.setFlags({ pauseRequested: true });
    deps.events.emit({ type: 'pause-requested', session: mirror.record });
    if (!scheduler.busy) {
      scheduler.pump();
      await scheduler.whenIdle();
    }
  }

  /**
   * A person's Stop: the model call and tools in flight are cancelled now (each cancelled or
   * unstarted tool call is answered "stopped by …", an unfinished answer is dropped), and the
   * session then waits like a paused one until a steer message or resume. Stored first, so the
   * driver on another replica sees it (Agent notifies it) and a crash cannot undo it. Memory runs
   * go on: they only read the context, and stopping them would leave nothing to gain.
   */
  async stopNow(by: string): Promise<'stopping' | 'already-paused'> {
    const { deps, mirror, scheduler } = this.scope;
    await this.refreshUnlessDriving();
    if (mirror.record.paused && scheduler.running !== 'drive') return 'already-paused';
    await mirror.setFlags({ stopRequestedBy: by, pauseRequested: true });
    deps.events.emit({ type: 'stop-requested', session: mirror.record, by });
    this.scope.runStop.abort(by);
    if (!scheduler.busy) scheduler.pump();
    return 'stopping';
  }

  /** A Stop said on another replica takes effect now, not at the next checkpoint. */
  readStopRequest(): void {
    const { deps, mirror } = this.scope;
    deps.stores.sessions.get(mirror.record.id).then(
      (session) => {
        if (session?.stopRequestedBy) this.scope.runStop.abort(session.stopRequestedBy);
      },
      (error: unknown) => deps.log.warn({ sessionId: mirror.record.id, err: String(error) }, 'stop-read-failed'),
    );
  }

  /** Clears the pause and continues with any backlog, without a new message. */
  async resume(): Promise<void> {
    const { deps, mirror } = this.scope;
    await this.refreshUnlessDriving();
    this.scope.personActed();
    this.scope.workFound();
    if (mirror.record.paused || mirror.record.pauseRequested) {
      // R21: resuming a paused session begins a new run (a fresh step count).
      await mirror.setFlags({ paused: false, pauseRequested: false, stopRequestedBy: null, ...(mirror.record.paused ? { runStartStep: mirror.record.workerSteps } : {}) });
      deps.events.emit({ type: 'resumed', session: mirror.record });
    }
    this.scope.scheduler.pump();
  }

  /** The worker stopped at a safe point (or was idle): the session is paused. */
  async enterPaused(): Promise<void> {
    // A Stop that found nothing running ends here too.
    await this.scope.mirror.setFlags({ paused: true, pauseRequested: false, stopRequestedBy: null });
    this.scope.deps.events.emit({ type: 'paused', session: this.scope.mirror.record });
  }

  /**
   * After a Stop the session waits like a paused one, unless someone resumed it meanwhile (a
   * steer or resume that came while the stop was under way wins).
   */
  async enterStopped(): Promise<void> {
    const { mirror } = this.scope;
    await mirror.refresh();
    const resumed = !mirror.record.pauseRequested && !mirror.record.paused;
    await mirror.setFlags(resumed ? { stopRequestedBy: null } : { paused: true, pauseRequested: false, stopRequestedBy: null });
  }

  /** Flags may have been changed by another replica while this one was not driving. */
  private async refreshUnlessDriving(): Promise<void> {
    if (!this.scope.scheduler.busy) await this.scope.mirror.refresh();
  }
}
