// The worker's context: segments between resets (R6) and their messages, stored before each next
// step (R12), with the steers taken into them (R9).
import type { ChatMessage } from '../messages.js';
import type { SteerRecord } from './steers.js';
import type { ModelCallRecord } from './usage.js';

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
