// R21: a run ends by itself. A step is one worker model call (memory forks are not steps); a run
// begins when a person's message is taken or a paused session is resumed. The count lives on the
// session's row (`workerSteps` grows in the statement that stores each answer, `runStartStep`
// moves in the statement that takes a person's message or resumes), so neither a reset nor a
// restart nor a hand-over to another replica starts it again: a looping model cannot escape it.
import type { AgentDeps } from '../agent-context.js';
import type { SessionRecord } from '../store.js';

type StepCount = Pick<SessionRecord, 'workerSteps' | 'runStartStep'>;

/** The steps the run in progress has taken (worker model calls since it began). */
export function runSteps(session: StepCount): number {
  return Math.max(0, session.workerSteps - session.runStartStep);
}

/** A session's step limit: whether its run must stop, and the thread's note when it does. */
export class StepLimit {
  constructor(private readonly deps: Pick<AgentDeps, 'settings' | 'events' | 'log'>) {}

  /** True when the run has taken RUN_MAX_STEPS steps: its worker makes no further model call. */
  reached(session: StepCount): boolean {
    return runSteps(session) >= this.deps.settings.runMaxSteps;
  }

  /**
   * The run stopped at the limit (the session is paused now): the thread is told why and how to
   * go on. Keyed by the session's step count, so a note emitted again is the same note (R17).
   */
  stopped(session: SessionRecord): void {
    const steps = runSteps(session);
    this.deps.log.warn({ sessionId: session.id, steps, maxSteps: this.deps.settings.runMaxSteps }, 'run-step-limit');
    this.deps.events.emit({ type: 'step-limit', session, steps, maxSteps: this.deps.settings.runMaxSteps, sessionSteps: session.workerSteps });
  }

  /**
   * A session paused at the limit may not have had its note taken by a chat adapter (the process
   * died in between): a runner loaded for it emits the note again; the adapters' key makes a repeat
   * harmless. True when it did.
   */
  redeliver(session: SessionRecord): boolean {
    if (!session.paused || !this.reached(session)) return false;
    this.deps.events.emit({ type: 'step-limit', session, steps: runSteps(session), maxSteps: this.deps.settings.runMaxSteps, sessionSteps: session.workerSteps });
    return true;
  }
}
