// The storage ports core needs, by concern in store/ and memory-store.ts, and all of them grouped
// (Stores). Implemented on Prisma in src/adapters/storage (Postgres or PGlite).
import type { ApprovalStore } from './approval-store.js';
import type { DocumentStore, MemorySpaceStore, ReviewStore } from './memory-store.js';
import type { ContextStore } from './store/context.js';
import type { DeliveryStore } from './store/deliveries.js';
import type { MemoryRunStore } from './store/memory-runs.js';
import type { SessionStore } from './store/sessions.js';
import type { EventLog, SteerStore } from './store/steers.js';
import type { UsageStore } from './store/usage.js';

// The memory documents' ports (R13, R15, review) live in memory-store.ts; they are part of this API.
export type * from './memory-store.js';
export { mainDocumentPath, todoDocumentPath } from './memory-store.js';
export type { MemoryScope, Platform } from './places.js';
export type * from './store/context.js';
export type * from './store/deliveries.js';
export type * from './store/memory-runs.js';
export type * from './store/replicas.js';
export type * from './store/sessions.js';
export type * from './store/steers.js';
export type * from './store/usage.js';

/** Everything core stores, grouped. */
export interface Stores {
  sessions: SessionStore;
  context: ContextStore;
  steers: SteerStore;
  events: EventLog;
  memoryRuns: MemoryRunStore;
  usage: UsageStore;
  documents: DocumentStore;
  deliveries: DeliveryStore;
  reviews: ReviewStore;
  spaces: MemorySpaceStore;
  /** R23: tool calls that wait for a person. */
  approvals: ApprovalStore;
}
