// Keeps a runner in step with its session's stored state across replicas (R8, R10, R11): when it
// claims the lease it reads again what another replica may have written (the row, the context,
// memory runs no live process runs any more, what the thread is owed), and acts only on what the
// row still asks for.
import type { AgentDeps } from '../agent-context.js';
import type { LiveContext } from '../loop/live-context.js';
import type { SteerInbox } from '../loop/steer-inbox.js';
import { buildInitMessages } from '../memory/init-messages.js';
import { tellInherited } from '../memory/inherited-memory.js';
import type { MemoryManager } from '../memory/memory-manager.js';
import type { ActivityKind, HeldClaim } from './activity-scheduler.js';
import type { SessionMirror } from './session-mirror.js';

/** What staying in step needs of the runner. */
export interface SessionSyncScope {
  deps: AgentDeps;
  mirror: SessionMirror;
  context: LiveContext;
  steers: SteerInbox;
  memory: MemoryManager;
  /** Emits again what the thread is still owed (R17). */
  redeliver(): Promise<unknown>;
  /** A steer waits: the worker has work. */
  workFound(): void;
}

export class SessionSync {
  constructor(private readonly scope: SessionSyncScope) {}

  /**
   * The lease was just claimed for `kind`: brings the runner up to date and says whether the
   * session's row still asks for the activity (false leaves the choice to the next pump).
   */
  async prepare(kind: ActivityKind, claim: HeldClaim): Promise<boolean> {
    const { mirror, context } = this.scope;
    // Another replica may have written since this runner was loaded (even a just-loaded runner
    // may have waited for the lease): re-read unless the lease stayed ours.
    if (claim === 'changed-hands') await this.reload();
    // Held all along, the lease saw every wake-up; otherwise a steer may have been stored while
    // this replica was not listening for them.
    if (claim !== 'held') this.scope.steers.arrived();
    // The row is the truth: a reset or a pause this copy remembers may have been carried out by
    // another replica since (R8, R11), so it is read again before acting on it.
    if (mirror.stale || (claim !== 'changed-hands' && (kind === 'reset' || kind === 'pause'))) await mirror.refresh();
    if (!(await this.stillAsked(kind))) return false;
    // A new session's first segment gets its init messages here, by the lease holder only (the
    // ones a failed attempt already stored are kept).
    const initStored = context.entries.filter((entry) => entry.isInit).length;
    if (initStored === context.entries.length) {
      const init = await buildInitMessages(this.scope.deps, mirror.record);
      await context.appendInit(init.slice(initStored));
      // A new session has seen no version of MAIN.md: a change from another thread is told.
      if (initStored === 0) await tellInherited(this.scope.deps, mirror.record, context.segment.id, 0, init);
    }
    return true;
  }

  /**
   * Re-reads the session and its context after another replica (or a storage failure) may have
   * changed them; memory runs that no live process runs any more are marked failed (R18).
   */
  async reload(): Promise<void> {
    const { deps, mirror, memory } = this.scope;
    await mirror.refresh();
    const sessionId = mirror.record.id;
    const { segment, messages } = await deps.stores.context.load(sessionId);
    this.scope.context.replace(segment, messages);
    const interrupted = await deps.stores.memoryRuns.failInterrupted(sessionId, memory.runningIds);
    if (interrupted > 0) deps.log.warn({ sessionId, runs: interrupted }, 'memory-runs-interrupted');
    // People's requests: another replica may have carried out what waited here, and an
    // interrupted run hands its request back; the store says which wait.
    memory.rereadRequests();
    // The replica that held the lease may have died with answers or notes still owed.
    await this.scope.redeliver();
  }

  /** After the lease was given up: a steer that slipped in meanwhile is work again (not when paused). */
  async workSlippedIn(): Promise<boolean> {
    const { mirror } = this.scope;
    if (mirror.record.paused || (await this.scope.deps.stores.steers.countQueued(mirror.record.id)) === 0) return false;
    this.scope.steers.arrived();
    this.scope.workFound();
    return true;
  }

  /**
   * Whether the session's row (just read) still asks for this activity; false leaves the choice
   * to pump. A reset is for the segment the row names: a copy behind it is reloaded first.
   */
  private async stillAsked(kind: ActivityKind): Promise<boolean> {
    const { context, memory } = this.scope;
    const { resetRequested, pauseRequested, paused, currentSegmentId } = this.scope.mirror.record;
    switch (kind) {
      case 'drive':
        // A command on another replica asked for a reset or a pause: that comes first, except
        // that a crashed turn's tool batch is closed before a reset (pump).
        if (paused) return false;
        return resetRequested ? context.tail() === 'tools-pending' : !pauseRequested;
      case 'reset':
        if (resetRequested && currentSegmentId !== null && currentSegmentId !== context.segment.id) await this.reload();
        return this.scope.mirror.record.resetRequested;
      case 'pause':
        return pauseRequested;
      case 'memory':
        await memory.loadRequests();
        return memory.summaryRequested;
    }
  }
}
