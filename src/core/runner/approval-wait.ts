// R23: how a drive of this runner leaves a call that waits for a person. A pause asked for (here
// or, re-read from the row, on another replica), a lost lease or a shutdown ends the wait with
// the call still waiting; the drive then ends mid-batch (a pause is entered now), and the next
// drive waits on the same approval.
import type { StopReason } from '../events.js';
import type { ApprovalGate } from '../loop/approval-gate.js';
import type { WorkerScope } from '../loop/worker-loop.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { SessionMirror } from './session-mirror.js';

/** What the wait needs of its runner. */
export interface ApprovalWaitParts {
  gate: ApprovalGate;
  mirror: SessionMirror;
  lease: LeaseKeeper;
  /** True once the runner stopped taking work (shutdown). */
  shuttingDown: () => boolean;
  enterPaused: () => Promise<void>;
}

/** The worker scope's `approvals` for one drive. */
export function approvalWait(parts: ApprovalWaitParts): NonNullable<WorkerScope['approvals']> {
  const { mirror, lease } = parts;
  return {
    gate: parts.gate,
    shouldLeave: async () => {
      if (mirror.stale) await mirror.refresh();
      return mirror.record.pauseRequested || mirror.record.paused || lease.lost || parts.shuttingDown();
    },
    leave: async (): Promise<StopReason> => {
      if (parts.shuttingDown()) return 'shutdown';
      if (lease.lost) return 'lease-lost';
      await parts.enterPaused();
      return 'paused';
    },
  };
}
