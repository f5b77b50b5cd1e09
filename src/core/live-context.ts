// The current segment of a session, mirrored in memory. Every change is persisted first, then
// applied here (R12: every message is persisted before the next step).
import type { ChatMessage, ToolCall } from './messages.js';
import type { ContextStore, SegmentRecord, SteerRecord, StoredMessage } from './store.js';

/** What the end of a context asks for next (markers and init messages are skipped). */
export type Tail =
  /** An assistant message has tool calls without results (possibly after a crash). */
  | 'tools-pending'
  /** The last message is a tool result or a person's message: the model must answer. */
  | 'needs-answer'
  /** Empty, or ends with a final answer: nothing to do until a steer message arrives. */
  | 'settled';

export class LiveContext {
  /** Prompt tokens reported for the last worker call of this segment, when known. */
  lastPromptTokens: number | null = null;

  constructor(
    private readonly store: ContextStore,
    public segment: SegmentRecord,
    public entries: StoredMessage[],
  ) {}

  /** The messages as sent to the model. */
  get messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  get nextSeq(): number {
    const last = this.entries.at(-1);
    return last ? last.seq + 1 : 0;
  }

  /** Persists then appends one message; `contextTokens` (a worker call's prompt size) goes with it. */
  async append(
    message: ChatMessage,
    flags: { isMarker?: boolean; isInit?: boolean; memoryRunId?: string; awaitingDelivery?: boolean } = {},
    contextTokens?: number,
  ): Promise<StoredMessage> {
    const entry: StoredMessage = {
      seq: this.nextSeq,
      message,
      isInit: flags.isInit ?? false,
      isMarker: flags.isMarker ?? false,
      memoryRunId: flags.memoryRunId ?? null,
      awaitingDelivery: flags.awaitingDelivery ?? false,
    };
    await this.store.append(this.segment.id, entry, contextTokens === undefined ? {} : { contextTokens });
    this.entries.push(entry);
    if (contextTokens !== undefined) this.segment.contextTokens = contextTokens;
    return entry;
  }

  /** Moves queued steer messages into the context (atomically, in the store); returns those taken. */
  async takeSteers(sessionId: string, render: (steer: SteerRecord) => ChatMessage): Promise<SteerRecord[]> {
    const seq = this.nextSeq;
    const taken = await this.store.takeSteers(sessionId, this.segment.id, seq, render);
    taken.forEach((steer, index) => {
      this.entries.push({ seq: seq + index, message: render(steer), isInit: false, isMarker: false, memoryRunId: null });
    });
    return taken;
  }

  /** Replaces the mirror after a reset started a new segment. */
  replace(segment: SegmentRecord, entries: StoredMessage[]): void {
    this.segment = segment;
    this.entries = entries;
    this.lastPromptTokens = null;
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
