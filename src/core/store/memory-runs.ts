// Summarizer and decider runs (R3, R4, R18): started with their fork point, finished with their
// outcome, failed when their process died.
import type { ChatMessage } from '../messages.js';
import type { PersonRequest } from '../memory-store.js';

export interface MemoryRunRecord {
  id: string;
  sessionId: string;
  segmentId: string;
  role: 'summarizer' | 'decider';
  round: number;
  /** `skipped`: its request would not have fit the window, so it was never sent (R19). */
  status: 'running' | 'succeeded' | 'failed' | 'skipped';
  forkPoint: number;
  /** A run a person asked for (remember / forget), else null. */
  request: PersonRequest | null;
}

export interface MemoryRunStore {
  /**
   * Records a run as running; `id` may be chosen by the caller (to name it before it is stored). A
   * run with a person's request takes it (no longer pending, ReviewStore.pendingRequests) with it.
   */
  start(run: Omit<MemoryRunRecord, 'id' | 'status' | 'request'> & { id?: string; request?: PersonRequest }): Promise<MemoryRunRecord>;
  /**
   * Records the outcome of a run that is still `running`; a run marked failed as interrupted
   * stays so unless it succeeded after all (a stalled process taken for dead: its late success
   * is recorded, R18); `awaitingDelivery` when a memory note for it is still to be posted;
   * `note`: a summarizer's final one-line note, kept as the reason of the versions it wrote.
   */
  finish(runId: string, result: { status: 'succeeded' | 'failed' | 'skipped'; decision?: 'reset' | 'keep'; error?: string; transcript: ChatMessage[]; usage: { promptTokens: number; cachedTokens: number; completionTokens: number }; awaitingDelivery?: boolean; note?: string }): Promise<void>;
  statuses(runIds: string[]): Promise<Map<string, MemoryRunRecord['status']>>;
  /**
   * R18: marks the session's runs still `running` failed, except `exceptRunIds` (runs this process
   * is running): their process died or lost the session. A person's request such a run had taken
   * is pending again (its note never came). Returns how many were marked.
   */
  failInterrupted(sessionId: string, exceptRunIds: readonly string[]): Promise<number>;
}
