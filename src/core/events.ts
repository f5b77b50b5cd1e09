// Core emits events; adapters render them (docs/style.md §8). Nothing here knows a chat platform.
import type { ApprovalRecord } from './approval-store.js';
import type { ChatMessage, ToolCall, AgentRole } from './messages.js';
import type { PersonRequest, SessionRecord, SteerRecord } from './store.js';

/** Line-diff statistics of one memory document change. */
export interface DocumentChange {
  documentId: string;
  path: string;
  /** The version this change created, and the one before it (0 = created). */
  version: number;
  previousVersion: number;
  added: number;
  removed: number;
  deleted: boolean;
}

export interface RunUsage {
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

/**
 * Why a run ended; 'storage': the database went away, the run goes on by itself when it is back;
 * 'budget': a spend cap was reached, the run goes on when a person raises it (or the day ends);
 * 'stopped': a person pressed Stop, the session waits like a paused one;
 * 'step-limit': the run took RUN_MAX_STEPS steps (R21), the session waits like a paused one.
 */
export type StopReason = 'idle' | 'paused' | 'reset' | 'error' | 'shutdown' | 'lease-lost' | 'storage' | 'budget' | 'stopped' | 'step-limit';

/** A file an answer sends: the call that asked for it, and its workspace path. */
export interface AnswerFile {
  callId: string;
  path: string;
}

/** Everything a session reports while it works. */
export type AgentEvent =
  | { type: 'run-start'; session: SessionRecord }
  /** `stoppedBy`: who pressed Stop (reason 'stopped'). */
  | { type: 'run-end'; session: SessionRecord; reason: StopReason; stoppedBy?: string }
  /**
   * Streamed text of a worker model call. `segmentId`/`seq` is the position its answer will take
   * (adapters key the streamed message by it, so the final answer replaces it even after a crash);
   * `text` is the call's text so far (a new call at the same position starts again from its first delta).
   */
  | { type: 'text-delta'; session: SessionRecord; segmentId: string; seq: number; delta: string; text: string }
  | { type: 'assistant-message'; session: SessionRecord; message: ChatMessage; segmentId: string; seq: number }
  /**
   * A final answer (assistant message without tool calls) to post in the thread. `fencingToken`
   * is the lease the worker held (null when re-sent after a crash): writes carry it (fencing).
   * `files`: workspace files sent with it (attach_file calls since the previous answer).
   */
  | { type: 'answer'; session: SessionRecord; text: string; segmentId: string; seq: number; fencingToken: number | null; files: AnswerFile[] }
  | { type: 'tool-call-start'; session: SessionRecord; call: ToolCall }
  | { type: 'tool-call-end'; session: SessionRecord; call: ToolCall; ok: boolean; result: string }
  /**
   * R23: a tool call waits for a person. Emitted again when a drive finds it still waiting (after a
   * restart or a hand-over): adapters key the card by the approval's id. `destructive`: its MCP
   * server marks the tool destructive.
   */
  | { type: 'approval-requested'; session: SessionRecord; approval: ApprovalRecord; call: ToolCall; destructive: boolean }
  /**
   * R23: an approval was decided. `first`: this process's conditional update decided it (counted
   * once); false: a drive found it decided (the card is updated again, under the same key).
   */
  | { type: 'approval-decided'; session: SessionRecord; approval: ApprovalRecord; first: boolean }
  | { type: 'steer-received'; session: SessionRecord; steer: SteerRecord }
  | { type: 'steer-taken'; session: SessionRecord; steers: SteerRecord[] }
  | { type: 'pause-requested'; session: SessionRecord }
  /** A person pressed Stop: the model call and tools in flight are cancelled now (on the driving replica). */
  | { type: 'stop-requested'; session: SessionRecord; by: string }
  | { type: 'paused'; session: SessionRecord }
  | { type: 'resumed'; session: SessionRecord }
  | { type: 'error'; session: SessionRecord; error: { code: string; message: string; retryable: boolean } }
  | {
      type: 'memory-updated';
      session: SessionRecord;
      memoryRunId: string;
      round: number;
      changes: DocumentChange[];
      usage: RunUsage;
      /** The summarizer's final one-line note ('' when unknown). */
      note?: string;
      /** A person asked for this run (remember / forget): the note says so, even without changes. */
      request?: PersonRequest;
    }
  | {
      type: 'context-reset';
      session: SessionRecord;
      segmentId: string;
      segmentOrdinal: number;
      tokensBefore: number;
      tokensAfter: number;
      carriedMessages: number;
      /** What the memory runs of the context that ended cost, in US dollars (null: prices unknown). */
      memoryCostUsd: number | null;
      /** The system reset because the context was full (R19); absent: a decider or a person. */
      reason?: 'context-full';
    }
  /**
   * A new context (a new session, or a reset) starts from MAIN.md that another session changed
   * since this thread last saw it (inherited-memory.ts): the thread is told once, by whom and when.
   * `by`: a person's name, or "background memory"; `inThread`: the change came from another
   * thread (else from outside any thread, e.g. Slack's Home tab). Best effort: not sent again after a crash.
   */
  | { type: 'memory-inherited'; session: SessionRecord; segmentId: string; version: number; changedAt: Date; by: string; inThread: boolean }
  /** A spend cap: 80% of it used ('warning'), or reached (memory and the worker stop). */
  | {
      type: 'budget';
      session: SessionRecord;
      level: 'warning' | 'reached';
      scope: 'session' | 'channel';
      spentUsd: number;
      capUsd: number;
      /** 'session', or the UTC day ("2026-12-03") of a channel's daily budget. */
      period: string;
    }
  /**
   * R21: the run took `steps` worker model calls, its limit (`maxSteps`), and the session is paused
   * until a reply or resume. `sessionSteps` (the session's worker calls so far) names this stop:
   * emitted again after a crash, the note keeps its key.
   */
  | { type: 'step-limit'; session: SessionRecord; steps: number; maxSteps: number; sessionSteps: number }
  | { type: 'memory-run-failed'; session: SessionRecord; role: Exclude<AgentRole, 'worker'>; memoryRunId: string; error: string }
  /** Every summarizer or decider run that ended, whatever its outcome (metrics, logs). */
  | { type: 'memory-run-end'; session: SessionRecord; role: Exclude<AgentRole, 'worker'>; memoryRunId: string; status: 'succeeded' | 'failed' | 'skipped'; decision?: 'reset' | 'keep' };

export type AgentEventType = AgentEvent['type'];
export type EventListener = (event: AgentEvent) => void;

/** Fans events out to listeners; a throwing listener never breaks the run. */
export class EventBus {
  private readonly listeners = new Set<EventListener>();

  constructor(private readonly onListenerError: (error: unknown, event: AgentEvent) => void = () => undefined) {}

  /** Adds a listener; returns a function that removes it. */
  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: AgentEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error, event);
      }
    }
  }
}
