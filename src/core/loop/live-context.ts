// The current segment of a session, mirrored in memory. Every change is persisted first, then
// applied here (R12: every message is persisted before the next step).
import { estimateTokens } from './context-window.js';
import { isTransient } from '../errors.js';
import { storableText } from '../text-hygiene.js';
import type { ChatMessage, ToolCall } from '../messages.js';
import type { ContextStore, ModelCallRecord, SegmentRecord, SteerRecord, StoredMessage } from '../store.js';

/** What the end of a context asks for next (markers and init messages are skipped). */
export type Tail =
  /** An assistant message has tool calls without results (possibly after a crash). */
  | 'tools-pending'
  /** The last message is a tool result or a person's message: the model must answer. */
  | 'needs-answer'
  /** Empty, or ends with a final answer: nothing to do until a steer message arrives. */
  | 'settled';

/** What the provider reported for the last worker call: its prompt covered messages before `coveredSeq`. */
export interface CallUsage {
  promptTokens: number;
  coveredSeq: number;
}

/**
 * A model answer or tool result that was computed but could not be stored (the database went
 * away). It is stored on the next attempt instead of being computed again: no second model bill,
 * no tool run twice.
 */
export type HeldResult =
  | { kind: 'answer'; seq: number; message: ChatMessage; contextTokens: number; usage?: ModelCallRecord }
  | { kind: 'tool-result'; callId: string; message: ChatMessage; ok: boolean };

export class LiveContext {
  /** The last worker call's usage in this segment, when known (R2 measures from it). */
  lastUsage: CallUsage | null = null;
  private readonly held = new Map<string, HeldResult>();
  /**
   * Calls whose begin mark went with the write before them (`startCall`) and that have not begun
   * here yet: stored as begun, yet not run by anyone (a crash between the two leaves the mark,
   * and the call counts as interrupted).
   */
  private readonly premarked = new Set<string>();

  constructor(
    private readonly store: ContextStore,
    public segment: SegmentRecord,
    public entries: StoredMessage[],
    /** Estimated tokens of what every request sends besides the messages (the tools array). */
    private readonly requestOverheadTokens = 0,
  ) {
    this.lastUsage = usageOf(segment);
  }

  /** The messages as sent to the model. */
  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  get nextSeq(): number {
    const last = this.entries.at(-1);
    return last ? last.seq + 1 : 0;
  }

  /**
   * R2: the size of the context the NEXT worker call will send: the last call's reported prompt
   * plus an estimate of everything appended since; without usage, an estimate of the whole request.
   */
  nextCallTokens(): number {
    const usage = this.lastUsage;
    if (!usage) return this.requestOverheadTokens + estimateTokens(this.messages);
    const appended = this.entries.filter((entry) => entry.seq >= usage.coveredSeq).map((entry) => entry.message);
    return usage.promptTokens + (appended.length > 0 ? estimateTokens(appended) : 0);
  }

  /**
   * Persists then appends one message; a worker call's prompt size, usage row and step (R21) go
   * with its answer, and `startCall`'s begin mark (the tool call that runs right after) with any message.
   */
  async append(
    message: ChatMessage,
    flags: { isMarker?: boolean; isInit?: boolean; memoryRunId?: string; awaitingDelivery?: boolean; startCall?: string } = {},
    call?: { contextTokens: number; usage?: ModelCallRecord; workerStepOf?: string },
  ): Promise<StoredMessage> {
    // The begin mark of the call that runs right after: on this message when it asks for the
    // call, else on the assistant message that did.
    const { startCall } = flags;
    const ownCall = startCall !== undefined && message.tool_calls?.some((each) => each.id === startCall) === true;
    const carrier = startCall === undefined || ownCall ? undefined : this.assistantWith(startCall);
    const entry: StoredMessage = {
      seq: this.nextSeq,
      message,
      isInit: flags.isInit ?? false,
      isMarker: flags.isMarker ?? false,
      memoryRunId: flags.memoryRunId ?? null,
      awaitingDelivery: flags.awaitingDelivery ?? false,
    };
    if (startCall !== undefined && ownCall) addMark(entry, startCall);
    // Noted before the write: if it commits but its answer is lost, the reload finds the mark ours.
    if (startCall !== undefined && (ownCall || carrier)) this.premarked.add(startCall);
    const startOther = carrier && startCall !== undefined ? { startCall: { seq: carrier.seq, callId: startCall } } : {};
    await this.store.append(this.segment.id, entry, { ...call, ...startOther });
    this.entries.push(entry);
    if (carrier && startCall !== undefined) addMark(carrier, startCall);
    if (call !== undefined) {
      const { contextTokens } = call;
      this.segment.contextTokens = contextTokens;
      this.segment.contextTokensSeq = entry.seq;
      this.lastUsage = { promptTokens: contextTokens, coveredSeq: entry.seq };
    }
    return entry;
  }

  /** Persists then appends a new segment's init messages, in one write. */
  async appendInit(messages: ChatMessage[]): Promise<void> {
    const first = this.nextSeq;
    const entries: StoredMessage[] = messages.map((message, index) => ({ seq: first + index, message, isInit: true, isMarker: false, memoryRunId: null, awaitingDelivery: false }));
    await this.store.appendInit(this.segment.id, entries);
    this.entries.push(...entries);
  }

  /**
   * Appends a result the worker computed; when the database fails transiently, the result is
   * held (see HeldResult) and the error rethrown, so the retry after a reload stores it.
   */
  async appendResult(result: HeldResult, flags: { awaitingDelivery?: boolean; startCall?: string } = {}): Promise<StoredMessage> {
    try {
      // A worker's answer is one step of the session's run (R21), counted in the same statement.
      const call = result.kind === 'answer' ? { contextTokens: result.contextTokens, ...(result.usage ? { usage: result.usage } : {}), workerStepOf: this.segment.sessionId } : undefined;
      const entry = await this.append(result.message, flags, call);
      this.held.delete(heldKey(result));
      if (result.kind === 'tool-result') this.premarked.delete(result.callId);
      return entry;
    } catch (error) {
      if (isTransient(error)) this.held.set(heldKey(result), result);
      throw error;
    }
  }

  /** A held model answer for the next position, if the context still ends where it was computed. */
  heldAnswer(): Extract<HeldResult, { kind: 'answer' }> | undefined {
    const held = this.held.get('answer');
    if (held?.kind !== 'answer') return undefined;
    if (held.seq === this.nextSeq && this.tail() === 'needs-answer') return held;
    this.held.delete('answer'); // stored after all (the write committed), or overtaken
    return undefined;
  }

  /** A held result of a tool call that is still unanswered. */
  heldToolResult(callId: string): Extract<HeldResult, { kind: 'tool-result' }> | undefined {
    const held = this.held.get(`tool:${callId}`);
    return held?.kind === 'tool-result' ? held : undefined;
  }

  /**
   * Before a call that is not safe to repeat runs: false when it had begun before (in this
   * process, or in one that died); otherwise records durably that it begins now, unless the write
   * before it already did (`startCall`), and returns true.
   */
  async beginCall(callId: string): Promise<boolean> {
    const entry = this.assistantWith(callId);
    if (!entry) return true;
    const premarked = this.premarked.delete(callId);
    if (hasMark(entry, callId)) return premarked;
    await this.store.markToolCallStarted(this.segment.id, entry.seq, callId);
    addMark(entry, callId);
    return true;
  }

  private assistantWith(callId: string): StoredMessage | undefined {
    return this.entries.findLast((entry) => entry.message.role === 'assistant' && entry.message.tool_calls?.some((call) => call.id === callId));
  }

  /** Moves queued steer messages into the context (atomically, in the store); returns those taken. */
  async takeSteers(sessionId: string, render: (steer: SteerRecord) => ChatMessage, prepare?: (steers: SteerRecord[]) => Promise<void>): Promise<SteerRecord[]> {
    const seq = this.nextSeq;
    const taken = await this.store.takeSteers(sessionId, this.segment.id, seq, render, prepare);
    taken.forEach((steer, index) => {
      this.entries.push({ seq: seq + index, message: render(steer), isInit: false, isMarker: false, memoryRunId: null });
    });
    return taken;
  }

  /** R22: persists then applies new content for messages already in the segment (same positions). */
  async rewrite(changes: ReadonlyArray<{ seq: number; message: ChatMessage }>): Promise<void> {
    await this.store.rewriteMessages(this.segment.id, changes);
    const bySeq = new Map(changes.map((change) => [change.seq, change.message]));
    for (const entry of this.entries) {
      const message = bySeq.get(entry.seq);
      if (message) entry.message = message;
    }
  }

  /** Replaces the mirror with the stored state (a reset started a new segment, or a reload). */
  replace(segment: SegmentRecord, entries: StoredMessage[]): void {
    this.segment = segment;
    this.entries = entries;
    this.lastUsage = usageOf(segment);
    // Results held for calls the stored context no longer waits for are dropped.
    const pending = new Set(this.pendingToolCalls().map((call) => call.id));
    for (const [key, held] of this.held) if (held.kind === 'tool-result' && !pending.has(held.callId)) this.held.delete(key);
    for (const callId of this.premarked) if (!pending.has(callId)) this.premarked.delete(callId);
  }

  tail(): Tail {
    const last = this.lastConversational();
    if (!last) return 'settled';
    if (this.pendingToolCalls().length > 0) return 'tools-pending';
    if (last.message.role === 'tool' || last.message.role === 'user') return 'needs-answer';
    return 'settled';
  }

  /** Tool calls of the last assistant message that have no result yet, in order. */
  pendingToolCalls(): ToolCall[] {
    for (let index = this.entries.length - 1; index >= 0; index -= 1) {
      const entry = this.entries[index];
      if (!entry || entry.isInit || entry.isMarker) continue;
      const message = entry.message;
      if (message.role === 'tool') continue;
      if (message.role !== 'assistant' || !message.tool_calls?.length) return [];
      const answered = new Set(
        this.entries.slice(index + 1).flatMap((later) => (later.message.role === 'tool' ? [later.message.tool_call_id] : [])),
      );
      return message.tool_calls.filter((call) => !answered.has(call.id));
    }
    return [];
  }

  private lastConversational(): StoredMessage | undefined {
    for (let index = this.entries.length - 1; index >= 0; index -= 1) {
      const entry = this.entries[index];
      if (entry && !entry.isInit && !entry.isMarker) return entry;
    }
    return undefined;
  }
}

/** The usage a stored segment knows of (none for a segment whose first call has not happened). */
function usageOf(segment: SegmentRecord): CallUsage | null {
  return segment.contextTokens > 0 ? { promptTokens: segment.contextTokens, coveredSeq: segment.contextTokensSeq } : null;
}

// Begin marks are kept as they are stored (a NUL, which Postgres cannot hold, as U+FFFD).
function hasMark(entry: StoredMessage, callId: string): boolean {
  return entry.startedToolCalls?.includes(storableText(callId)) ?? false;
}

function addMark(entry: StoredMessage, callId: string): void {
  if (!hasMark(entry, callId)) entry.startedToolCalls = [...(entry.startedToolCalls ?? []), storableText(callId)];
}

function heldKey(result: HeldResult): string {
  return result.kind === 'answer' ? 'answer' : `tool:${result.callId}`;
}
