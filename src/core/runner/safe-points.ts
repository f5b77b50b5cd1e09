// What the worker's safe points decide (R6, R11, R19, R21). At a checkpoint (after a batch's
// results or an answer) the memory trigger comes first (R2, R3), then the gate: a spend cap, a
// reset the worker must stop for, a pause, shutdown, a lost lease. Right before each worker call
// the hard limit and the run's step limit are checked (a steer taken at the start of a drive passes
// no checkpoint).
import type { AgentDeps } from '../agent-context.js';
import type { StopReason } from '../events.js';
import type { LiveContext } from '../loop/live-context.js';
import type { MemoryManager } from '../memory/memory-manager.js';
import type { SessionRecord } from '../store.js';
import type { HardLimit } from './hard-limit.js';
import type { RunStop } from './run-stop.js';
import type { SessionBudget } from './session-budget.js';
import type { SessionMirror } from './session-mirror.js';
import type { StepLimit } from './step-limit.js';

/** What the safe points read of their runner. */
export interface SafePointScope {
  deps: Pick<AgentDeps, 'settings'>;
  mirror: SessionMirror;
  context: LiveContext;
  memory: MemoryManager;
  budget: SessionBudget;
  steps: StepLimit;
  hardLimit: HardLimit;
  runStop: RunStop;
  /** The runner is alive (the registry evicts idle runners). */
  touch(): void;
  /** True once the runner stopped taking work (shutdown). */
  shuttingDown(): boolean;
  /** True when the lease was lost (another replica may drive now). */
  leaseLost(): boolean;
  /** The worker stopped at a safe point: the session is paused. */
  enterPaused(): Promise<void>;
}

export class SafePoints {
  constructor(private readonly scope: SafePointScope) {}

  private get session(): SessionRecord {
    return this.scope.mirror.record;
  }

  /** A checkpoint: memory trigger first, then the reset/pause/shutdown gate; non-null stops the loop. */
  async checkpoint(): Promise<StopReason | null> {
    const { mirror, memory, hardLimit } = this.scope;
    this.scope.touch();
    if (this.scope.runStop.stoppedBy !== null) return 'stopped';
    if (mirror.stale) await mirror.refresh();
    // A spend cap reached: memory work stops first (nothing forks) and the worker stops here.
    if ((await this.scope.budget.check(this.session)).level === 'reached') {
      await memory.onCheckpoint({ fork: false });
      return 'budget';
    }
    // R6: with a reset pending nothing new is forked (its marker would cut the step in flight,
    // R3), but the step is consumed.
    await memory.onCheckpoint({ fork: !this.session.resetRequested });
    // R19: forked first (the summarizer covers the full context), then the system's own reset.
    await hardLimit.resetIfFull();
    if (this.session.resetRequested && this.mustStopForReset()) return 'reset';
    if (this.session.pauseRequested || this.session.paused) {
      await this.scope.enterPaused();
      return 'paused';
    }
    if (this.scope.shuttingDown()) return 'shutdown';
    if (this.scope.leaseLost()) return 'lease-lost';
    return null;
  }

  /**
   * Before each worker call: at the hard limit the reset comes first, unless R6 lets the worker go
   * on while a summarizer runs. R21: a run that took its steps stops here, after its last batch's
   * checkpoint and after the steers that came meanwhile were taken (a reply there begins a new run
   * instead): as if paused, with a note. With a reset pending it stops for the reset first; the
   * limit holds after it.
   */
  async beforeWorkerCall(): Promise<StopReason | null> {
    await this.scope.hardLimit.resetIfFull();
    if (this.session.resetRequested && this.mustStopForReset()) return 'reset';
    if (!this.scope.steps.reached(this.session)) return null;
    if (this.session.resetRequested) return 'reset';
    await this.scope.enterPaused();
    this.scope.steps.stopped(this.session);
    return 'step-limit';
  }

  /**
   * R6: the worker never waits for memory: while a summarizer runs it goes on (taking no steer
   * message), and stops for the reset at the first checkpoint where none runs, or when the
   * context passed the limit (then the reset waits for the summarizer).
   */
  private mustStopForReset(): boolean {
    if (!this.scope.memory.summarizerRunning) return true;
    const { settings } = this.scope.deps;
    return this.scope.context.nextCallTokens() * 100 >= settings.resetWaitPercent * settings.contextWindow;
  }
}
