// R23: the storage port of tool approvals (a call that waits for a person). The row is written
// before anyone is asked; the decision is one conditional update, so it is taken exactly once.

/** Where an approval stands: waiting, or how it ended. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled';

/** What a person decided on a card: this call, this tool for the rest of the run, or no. */
export type ApprovalChoice = 'approve' | 'approve-run' | 'deny';

/** One call that waits, or waited, for a person. */
export interface ApprovalRecord {
  id: string;
  sessionId: string;
  /** The assistant message holding the call: its segment and position, and the call's id. */
  segmentId: string;
  messageSeq: number;
  callId: string;
  tool: string;
  /** The call's arguments as the model sent them (capped). */
  arguments: string;
  /** R21: the run that asked (its `runStartStep`). */
  runStartStep: number;
  /** Who asked for the run (the author of the last message the run took), '' when unknown. */
  requestedBy: string;
  status: ApprovalStatus;
  /** 'run': approved for this tool for the rest of the run. */
  scope: 'call' | 'run';
  decidedById: string | null;
  decidedByName: string | null;
  /** Why it was denied (a person's words, the timeout's note, a Stop). */
  note: string | null;
  createdAt: Date;
  expiresAt: Date;
  decidedAt: Date | null;
}

/** A new approval to store (insert-if-absent on the call's place). */
export interface NewApproval {
  sessionId: string;
  segmentId: string;
  messageSeq: number;
  callId: string;
  tool: string;
  arguments: string;
  runStartStep: number;
  /** How long a person has to decide, in milliseconds (then it expires: a denial with a note). */
  timeoutMs: number;
}

/** A decision as asked for: by a person's click, by the timeout, or by a Stop. */
export interface ApprovalDecision {
  status: Exclude<ApprovalStatus, 'pending'>;
  scope?: 'call' | 'run';
  byId: string | null;
  byName: string | null;
  note?: string | null;
}

export interface ApprovalStore {
  /**
   * The approval of a call, stored now if it is not yet (the same call asked twice, after a crash
   * or by two processes, gets the one row); `created` says whether this call stored it.
   */
  request(approval: NewApproval): Promise<{ approval: ApprovalRecord; created: boolean }>;
  get(id: string): Promise<ApprovalRecord | null>;
  /**
   * Decides a pending approval in one conditional statement: the decision that changes the row
   * from 'pending' wins; any other (a second click, another replica, an expiry) gets `decided:
   * false` and the row as it stands. A person's approval after `expires_at` is refused.
   */
  decide(id: string, decision: ApprovalDecision): Promise<{ approval: ApprovalRecord | null; decided: boolean }>;
  /** Whether `tool` was approved for the rest of the run that began at `runStartStep`. */
  approvedForRun(sessionId: string, runStartStep: number, tool: string): Promise<boolean>;
  /** The session's latest approvals, newest first (status, history). */
  recent(sessionId: string, limit: number): Promise<ApprovalRecord[]>;
}
