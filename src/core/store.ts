// The storage ports core needs. Implemented on Prisma in src/adapters/storage (Postgres or PGlite).
// Over ~400 lines: one interface per store, each with its records, kept in one file so an adapter
// sees the whole port it implements; a split by concern (sessions, context, memory runs) is #42's.
import type { ApprovalStore } from './approval-store.js';
import type { AgentRole, ChatMessage } from './messages.js';
import type { DocumentStore, MemorySpaceStore, PersonRequest, ReviewStore } from './memory-store.js';
import type { MemoryScope, Platform } from './places.js';

// The memory documents' ports (R13, R15, review) live in memory-store.ts; they are part of this API.
export type * from './memory-store.js';

export type { MemoryScope, Platform } from './places.js';

/** Where a session lives on its platform. */
export interface ThreadAddress {
  platform: Platform;
  /** Slack team id, Discord guild id ("@me" for DMs), "local" for the console. */
  workspaceId: string;
  channelId: string;
  /** Slack thread_ts, Discord thread (or DM channel) id. */
  threadKey: string;
  /**
   * Who can read the conversation; decides which memory space a new session may share: a direct
   * conversation has a space of its own, a private one never shares with public ones. Unset: public.
   */
  visibility?: Visibility;
}

/**
 * Who can read a conversation: everyone in the workspace, its members only, one person and Hippo,
 * only the people invited to a thread (a Discord private thread: a conversation of its own
 * inside a channel, so its memory space is its own under every scope), or people the workspace's
 * shared memory is not for (`shared`: a Slack Connect channel, or a session a guest or someone
 * from another organisation started), which never runs on the space all public channels share.
 */
export type Visibility = 'public' | 'private' | 'direct' | 'invited' | 'shared';

/** A session as core sees it. */
export interface SessionRecord extends ThreadAddress {
  id: string;
  memorySpaceId: string;
  title: string;
  /** Platform user id of the person whose message started the session; null when not recorded. */
  startedBy: string | null;
  /** R11: a person asked for a pause, effective at the next checkpoint. */
  pauseRequested: boolean;
  /** R11: stopped until resume or a steer message. */
  paused: boolean;
  /** R6: a reset was decided and is not finished; it is for the current segment (a reset clears it). */
  resetRequested: boolean;
  /** The segment the session is in now (the truth replicas check their mirrors against). */
  currentSegmentId: string | null;
  /** This session's spend cap in US dollars when a person raised it; null: the configured one. */
  budgetUsd: number | null;
  /** A person pressed Stop (their name) and the driver has not stopped yet; null otherwise. */
  stopRequestedBy: string | null;
  /** R21: the session's worker model calls so far, all runs together. */
  workerSteps: number;
  /** R21: `workerSteps` when the current run began (a person's message taken, or a resume). */
  runStartStep: number;
  /**
   * The W3C traceparent of the run under way, when traces are on: a run that another process
   * starts after a crash, a hand-over or a reset continues its trace. Null or absent: none.
   */
  traceContext?: string | null;
}

export type SessionFlags = Pick<SessionRecord, 'pauseRequested' | 'paused' | 'resetRequested' | 'stopRequestedBy' | 'runStartStep'>;

/** One worker context between two resets. */
export interface SegmentRecord {
  id: string;
  sessionId: string;
  ordinal: number;
  lastStep: number;
  summarizerRounds: number;
  deciderRounds: number;
  /**
   * R3 policy (deciderEvery): triggered steps over the decider floor still to go before a decider
   * is due; 0: the next one. Stored, and counted whether or not a decider runs at the time.
   */
  deciderDueIn: number;
  /** Prompt tokens the provider reported for the last worker call (at the start: the estimate). */
  contextTokens: number;
  /** `contextTokens` covers the messages before this position (R2 estimates the rest). */
  contextTokensSeq: number;
  carriedMessages: number;
}

/** A context message with its storage flags. */
export interface StoredMessage {
  seq: number;
  message: ChatMessage;
  isInit: boolean;
  isMarker: boolean;
  /** For markers: the summarizer run placed with it. */
  memoryRunId: string | null;
  /** For assistant messages: the calls that began running (see Tool.repeatable). */
  startedToolCalls?: string[];
  /**
   * A final answer that the chat adapter has not taken yet (re-sent after a crash). Only ever set
   * on the original: a copy carried into a new segment is never owed (R17).
   */
  awaitingDelivery?: boolean;
}

/** A file someone shared with a message, as the platform describes it. */
export interface Attachment {
  /** The file's name as shared. */
  name: string;
  /** MIME type, when the platform says (e.g. "image/png"). */
  mimeType: string | null;
  /** Size in bytes as the platform says (0 when unknown). */
  size: number;
  /** The platform's reference: a Slack file id, a Discord attachment id. */
  ref: string;
  /** Where the platform serves it, when it said so. */
  url?: string;
}

/** A steer message waiting in the inbound queue. */
export interface SteerRecord {
  id: number;
  sessionId: string;
  platformMessageKey: string;
  authorId: string;
  authorName: string;
  text: string;
  /** Files and images shared with the message (saved into the workspace when it is taken). */
  attachments: Attachment[];
  status: 'queued' | 'taken' | 'withdrawn';
  receivedAt: Date;
}

export interface NewSteer {
  sessionId: string;
  platformMessageKey: string;
  authorId: string;
  authorName: string;
  text: string;
  attachments?: Attachment[];
}

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

export interface ModelCallRecord {
  sessionId: string;
  segmentId: string | null;
  memoryRunId: string | null;
  role: AgentRole;
  model: string;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Prompt tokens written to the prompt cache, where the provider reports them (else null or absent). */
  cacheWriteTokens?: number | null;
  latencyMs: number;
  error: string | null;
}

/** One worker step of a session's context history: the prompt tokens its model call sent. */
export interface ContextStep {
  /** The segment (context) it was in: 1, 2, 3 … (a reset starts the next). */
  segment: number;
  tokens: number;
  /** A summarizer was forked after this step (a memory checkpoint). */
  memory: boolean;
}

/** The context's size over a session's life, for `status` (newest steps when there are many). */
export interface ContextHistory {
  steps: ContextStep[];
  /** Why each reset happened, by the segment it started ('context-full', R19; null: a decider or a person). */
  resets: Array<{ segment: number; reason: 'context-full' | null }>;
  /** Earlier steps left out of `steps`. */
  omitted: number;
}

/** Usage so far for a session, by role. */
export type UsageSummary = Record<AgentRole, { calls: number; promptTokens: number; cachedTokens: number; completionTokens: number }>;

export interface SessionStore {
  /** Finds the session of a thread, or creates it with its memory space and first segment. */
  open(address: ThreadAddress, options: { title: string; scope: MemoryScope; startedBy?: string }): Promise<{ session: SessionRecord; created: boolean }>;
  find(address: ThreadAddress): Promise<SessionRecord | null>;
  get(sessionId: string): Promise<SessionRecord | null>;
  setFlags(sessionId: string, flags: Partial<SessionFlags>): Promise<void>;
  /**
   * R8: stores a pending reset unless one is pending already or, when `segmentId` is given, the
   * session is no longer in that segment (a decider of an ended segment). True when stored.
   */
  requestReset(sessionId: string, segmentId: string | null): Promise<boolean>;
  /** Sets this session's spend cap (a person raised it). */
  setBudget(sessionId: string, usd: number): Promise<void>;
  /** Sessions that have work to do without a new message: queued steers or an unfinished tail. */
  withBacklog(): Promise<string[]>;
  /** The channel's most recently started session, or null. */
  latestInChannel(channel: Pick<ThreadAddress, 'platform' | 'workspaceId' | 'channelId'>): Promise<SessionRecord | null>;
}

export interface ContextStore {
  /** The session's current segment and its messages in order. */
  load(sessionId: string): Promise<{ segment: SegmentRecord; messages: StoredMessage[] }>;
  /** The messages of any segment, in order (an earlier one: an answer it still owes, R17). */
  segmentMessages(segmentId: string): Promise<StoredMessage[]>;
  /**
   * Appends one message at `seq`; throws ConflictError if that position is taken by a different
   * message (a second writer); finding the same message there (a retried write) is success.
   * `contextTokens`, when given, is the prompt size of the call that produced this message: it is
   * stored on the segment in the same statement, covering the messages before `seq`; `usage`,
   * when given, is the usage row of that call, written in the same statement (R14). `startCall`,
   * when given, marks a tool call of the assistant message at its `seq` as begun, in the same
   * statement (the call that runs right after this write). A refused append writes none of them.
   * `workerStepOf`, when given, is the session whose `workerSteps` this answer adds one to (R21),
   * in the same statement. The entry's own `startedToolCalls` are stored with it.
   */
  append(segmentId: string, entry: StoredMessage, options?: { contextTokens?: number; usage?: ModelCallRecord; startCall?: { seq: number; callId: string }; workerStepOf?: string }): Promise<void>;
  /**
   * Appends a new segment's init messages in one statement, at their `seq`s; finding the same
   * messages there (a retried write) is success, other messages there a ConflictError.
   */
  appendInit(segmentId: string, entries: StoredMessage[]): Promise<void>;
  updateSegment(segmentId: string, patch: Partial<Pick<SegmentRecord, 'lastStep' | 'summarizerRounds' | 'deciderRounds' | 'deciderDueIn' | 'contextTokens'>>): Promise<void>;
  /** Records, before it runs, that a tool call of the assistant message at `seq` began (crash safety). */
  markToolCallStarted(segmentId: string, seq: number, callId: string): Promise<void>;
  /**
   * Atomically moves the session's queued steer messages into the segment, in id order from
   * `seq`, rendered by `render`; returns the steers taken (empty when none were queued). Taking
   * any begins a new run (R21: `runStartStep` = `workerSteps`), in the same statement. A steer
   * edited or withdrawn while it was being rendered is left for the next call. `prepare` runs
   * between the look and the render (saving attachments), holding no transaction.
   */
  takeSteers(sessionId: string, segmentId: string, seq: number, render: (steer: SteerRecord) => ChatMessage, prepare?: (steers: SteerRecord[]) => Promise<void>): Promise<SteerRecord[]>;
  /**
   * R6, one transaction: ends `next.fromSegmentId` (ConflictError unless it is still current),
   * starts the next segment with `messages` (init + carry-over; no copy is owed delivery, R17) at
   * `lastStep`, and clears the session's pending reset. The new segment awaits its reset note.
   */
  startSegment(sessionId: string, next: NewSegment): Promise<SegmentRecord>;
  /**
   * R22: rewrites the content of messages already in a segment (an image part the provider refused
   * becomes a text note), one statement; the messages keep their positions, flags and begin marks.
   */
  rewriteMessages(segmentId: string, entries: ReadonlyArray<{ seq: number; message: ChatMessage }>): Promise<void>;
  /**
   * Full-text search over earlier segments of sessions in the memory space (R15); each message once,
   * where it was first said (carried copies are left out). `searcher` (a person, or a session's
   * model) is who asks: searches are limited per searcher and in time, and a refused or stopped one
   * throws SearchLimitError with what to tell them.
   */
  searchOriginals(memorySpaceId: string, query: string, excludeSegmentId: string, limit: number, searcher: string): Promise<SearchHit[]>;
}

/** What a reset starts the next segment with. */
export interface NewSegment {
  fromSegmentId: string;
  messages: StoredMessage[];
  carriedMessages: number;
  /** The new context's size as R2 measures it (estimate of the whole request). */
  startTokens: number;
  /** R6: the new segment's current step, so it does not trigger at once. */
  lastStep: number;
  /** R19: the system reset because the context was full (the note says so, also when re-sent). */
  reason?: 'context-full';
}

export interface SearchHit {
  sessionId: string;
  segmentOrdinal: number;
  seq: number;
  role: string;
  snippet: string;
}

/** A person's message as it arrives, before anything else is done with it. */
export interface ArrivingMessage {
  address: ThreadAddress;
  /** Creates the thread's session (with its memory space and first segment) when it has none. */
  start?: { title: string; scope: MemoryScope; startedBy?: string };
  steer: Omit<NewSteer, 'sessionId'>;
  /** The platform's event id, recorded as processed with the message (a retry finds it). */
  eventKey?: string;
}

export interface Accepted {
  /** Null: the thread has no session and none was to be started (the message is not stored). */
  session: SessionRecord | null;
  steer: SteerRecord | null;
  /** False for a redelivery (the message was queued already). */
  inserted: boolean;
  /** The session was created by this message. */
  created: boolean;
  /** The store told the drivers on every replica itself (with the message, on commit). */
  notified: boolean;
}

export interface SteerStore {
  /**
   * Stores an arriving message at once, as one durable write: the event recorded, the session
   * found or started, the message queued (R9). The platform is acknowledged after it.
   */
  accept(message: ArrivingMessage): Promise<Accepted>;
  /** Inserts if the platform key is new; `inserted` false means a duplicate delivery. */
  enqueue(steer: NewSteer): Promise<{ steer: SteerRecord; inserted: boolean }>;
  /** Edits a still-queued steer; false when it was already taken. */
  edit(platformMessageKey: string, text: string): Promise<boolean>;
  /** Withdraws a still-queued steer; false when it was already taken. */
  withdraw(platformMessageKey: string): Promise<boolean>;
  countQueued(sessionId: string): Promise<number>;
}

export interface EventLog {
  /** Records a platform event id; false when it was seen before (insert-if-absent). */
  markProcessed(key: string): Promise<boolean>;
  /** Whether a platform event id was recorded (a retry of an event already handled). */
  wasProcessed(key: string): Promise<boolean>;
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

export interface UsageStore {
  record(call: ModelCallRecord): Promise<void>;
  summary(sessionId: string): Promise<UsageSummary>;
  /** The context's size at each worker step, memory checkpoints and resets (the newest `limit` steps). */
  contextHistory(sessionId: string, limit: number): Promise<ContextHistory>;
  /** Token totals by model and role in a scope (what was spent: each model has its own prices). */
  totals(scope: UsageScope): Promise<UsageTotal[]>;
}

/** Whose spend: a session (or one segment of it), or a channel since a moment (a day's budget). */
export type UsageScope =
  | { sessionId: string; segmentId?: string }
  | { channel: Pick<ThreadAddress, 'platform' | 'workspaceId' | 'channelId'>; since: Date };

/** Tokens of one model and role in a scope. */
export interface UsageTotal {
  model: string;
  role: AgentRole;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Absent when no call of the group reported cache writes. */
  cacheWriteTokens?: number | undefined;
}

/** What a session still owes its thread: answers and notes not yet taken by the chat adapter. */
export interface PendingDeliveries {
  answers: Array<{ segmentId: string; seq: number; text: string }>;
  memoryRuns: Array<{ memoryRunId: string; round: number; usage: { promptTokens: number; cachedTokens: number; completionTokens: number }; request: PersonRequest | null; note: string }>;
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

// ── replicas: leases and wake-ups (one driver per session across processes, R10) ───────────

/** Who drives a session, and the fencing token that orders its writers. */
export interface Lease {
  sessionId: string;
  owner: string;
  fencingToken: number;
  expiresAt: Date;
  /**
   * How long the lease stays held after the statement ran (ms), computed by the database on its
   * own clock (expires_at − now()): the holder counts it from when it sent the statement, so a
   * skew between its clock and the database's cannot make it believe it holds an expired lease.
   */
  validForMs: number;
}

export interface LeaseStore {
  /**
   * Takes the lease for `owner` unless another owner holds an unexpired one (then null). The
   * token grows when the lease changes hands; the same owner re-claiming keeps its token.
   */
  acquire(sessionId: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /**
   * Extends every lease `owner` holds of `leases` in one statement (a process renews all its
   * sessions at one beat); returns the sessions still held, each with how long it now stays held
   * (ms, on the database's clock, as Lease.validForMs); the others were lost: expired and taken.
   */
  renewAll(owner: string, leases: ReadonlyArray<{ sessionId: string; fencingToken: number }>, ttlMs: number): Promise<Map<string, number>>;
  /** Gives the lease up at idle (owner and token are kept: tokens only grow). */
  release(sessionId: string, owner: string, fencingToken: number): Promise<void>;
  /** Current fencing token of a session (0 when none was ever taken). */
  currentToken(sessionId: string): Promise<number>;
  /**
   * Sessions with backlog whose driver is gone: an expired lease, or work queued for longer than
   * `graceMs` with no live owner (the receiving replica normally takes those itself).
   */
  orphaned(graceMs: number): Promise<string[]>;
}

/**
 * Why a session's driver is woken: new work (a steer), flags a person changed elsewhere, or
 * 'missed': notifications may have been lost (the listening connection was re-established), so
 * every session is to be looked at again (the session id is then empty).
 */
/**
 * Why a session is woken: `work`, a person's message was stored; `flags`, a person's command (or a
 * reset request) changed its flags; `memory`, a person's remember / forget was stored; `approval`,
 * a person decided a tool call that waits (R23); `missed`,
 * notifications may have been lost (every session is looked at again).
 */
export type WakeReason = 'work' | 'flags' | 'memory' | 'approval' | 'missed';

/** Cross-replica wake-ups: "this session has new work" (Postgres LISTEN/NOTIFY). */
export interface Wakeups {
  notify(sessionId: string, reason?: WakeReason): Promise<void>;
  /** Calls `handler` for every notification, from any replica (this one included). */
  subscribe(handler: (sessionId: string, reason: WakeReason) => void): () => void;
  close(): Promise<void>;
}
