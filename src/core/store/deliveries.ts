// What a thread is owed (R17): answers and notes stored with a mark until a chat adapter has them.
import type { PersonRequest } from '../memory-store.js';

/** What a session still owes its thread: answers and notes not yet taken by the chat adapter. */
export interface PendingDeliveries {
  answers: Array<{ segmentId: string; seq: number; text: string }>;
  memoryRuns: Array<{ memoryRunId: string; round: number; usage: { promptTokens: number; cachedTokens: number; completionTokens: number }; request: PersonRequest | null; transcript: readonly unknown[] }>;
  resets: Array<{ segmentId: string; previousSegmentId: string | null; ordinal: number; tokensBefore: number; tokensAfter: number; carriedMessages: number; reason?: 'context-full' }>;
}

/**
 * Delivery marks: core emits an answer or a note after storing it, and the chat adapter marks it
 * delivered once it is in the outbox. What is still unmarked after a crash is emitted again.
 */
export interface DeliveryStore {
  pending(sessionId: string): Promise<PendingDeliveries>;
  sessionsWithPending(): Promise<string[]>;
  markAnswer(segmentId: string, seq: number): Promise<void>;
  markMemoryRun(memoryRunId: string): Promise<void>;
  markReset(segmentId: string): Promise<void>;
}
