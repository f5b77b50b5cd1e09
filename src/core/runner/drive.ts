// One drive of the worker by the lease holder's runner (R10). A run begins when the loop finds work
// (a wake-up for steers already taken is no run) and ends with one run-end event, whatever ended
// it: idle, a safe point's stop, a person's Stop, the storage going away (the scheduler waits it
// out), another replica taking the session over, a call refused as too long (R19), or a failure.
import { ConflictError, ContextTooLongError, isTransient } from '../errors.js';
import type { AgentDeps } from '../agent-context.js';
import type { AgentEvent, StopReason } from '../events.js';
import { runWorkerLoop, type WorkerScope } from '../loop/worker-loop.js';
import type { HardLimit } from './hard-limit.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { RunStop } from './run-stop.js';
import type { SessionBudget } from './session-budget.js';
import type { SessionRecord } from '../store.js';

/** What a drive needs of its runner: the worker's scope, and how the runner takes each ending. */
export interface DriveScope extends Omit<WorkerScope, 'onWork' | 'stoppedBy' | 'signal'> {
  budget: SessionBudget;
  runStop: RunStop;
  lease: LeaseKeeper;
  hardLimit: HardLimit;
  /** Aborted on shutdown. */
  lifetime: AbortSignal;
  /** True once the runner stopped taking work (shutdown). */
  shuttingDown(): boolean;
  /** How many messages and commands people sent so far (one during a failing drive is work after it). */
  personActs(): number;
  /** The drive failed for good: the session waits for a person. */
  failedForGood(): void;
  /** After a Stop the session waits like a paused one. */
  enterStopped(): Promise<void>;
}

/** Drives the worker once; throws only a transient storage error (the scheduler tries again). */
export async function drive(scope: DriveScope): Promise<void> {
  const { deps, context } = scope;
  if (context.tail() === 'settled' && !scope.steers.mayHaveQueued) return;
  // A session over its budget does not call the model; its messages wait for a raised budget.
  if ((await scope.budget.check(scope.session())).level === 'reached') return;
  const session = scope.session();
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    deps.events.emit({ type: 'run-start', session });
  };
  let reason: StopReason;
  const actsAtStart = scope.personActs();
  const signal = scope.runStop.begin(scope.lifetime);
  try {
    reason = await runWorkerLoop({ ...scope, onWork: start, stoppedBy: () => scope.runStop.stoppedBy, signal });
    if (reason === 'stopped') await scope.enterStopped();
  } catch (error) {
    if (error instanceof ConflictError) {
      // Another replica wrote this session (our lease lapsed): stop quietly; reload next time.
      deps.log.warn({ sessionId: session.id, err: error.message }, 'run-superseded');
      scope.lease.forget();
      if (started) deps.events.emit({ type: 'run-end', session: scope.session(), reason: 'lease-lost' });
      return;
    }
    const stopping = scope.shuttingDown();
    if (isTransient(error) && !stopping) {
      // Waited out by the scheduler; the card says the run stalls and will go on by itself.
      if (started) deps.events.emit({ type: 'run-end', session: scope.session(), reason: 'storage' });
      throw error;
    }
    start();
    reason = stopping ? 'shutdown' : 'error';
    if (error instanceof ContextTooLongError && !stopping && scope.hardLimit.mayRetryTooLong && (await scope.hardLimit.resetForTooLong(error))) {
      reason = 'reset';
    } else if (!scope.shuttingDown()) {
      // A message said while this drive failed, and not taken by it, is heard: the next drive
      // takes it (once per message or command, so no loop); otherwise the session waits for a person.
      if (scope.personActs() === actsAtStart || !(await steersQueued(deps, session.id))) scope.failedForGood();
      deps.log.error({ sessionId: session.id, err: error instanceof Error ? error.message : String(error) }, 'run-failed');
      deps.events.emit(errorEvent(scope.session(), error));
    }
  }
  const stoppedBy = scope.runStop.end();
  if (started) deps.events.emit({ type: 'run-end', session: scope.session(), reason, ...(reason === 'stopped' && stoppedBy !== null ? { stoppedBy } : {}) });
}

/** The error event of a failure: its code, message and whether trying again may help. */
export function errorEvent(session: SessionRecord, error: unknown): AgentEvent {
  // A storage error is retryable when transient (the outage is waited out), as a model error says.
  const retryable = isTransient(error) || (typeof error === 'object' && error !== null && 'retryable' in error ? Boolean(error.retryable) : false);
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'internal';
  const message = error instanceof Error ? error.message : String(error);
  return { type: 'error', session, error: { code, message, retryable } };
}

/** Whether messages wait in the queue (false when the database cannot say). */
async function steersQueued(deps: Pick<AgentDeps, 'stores'>, sessionId: string): Promise<boolean> {
  return (await deps.stores.steers.countQueued(sessionId).catch(() => 0)) > 0;
}
