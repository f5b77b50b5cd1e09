// The answer as it forms (docs/product.md "Watch"), platform-free: text deltas of a session are
// coalesced and written at most once per interval (the first write only after the text kept
// coming for a while, so a short answer is simply posted). The platform renderer turns each write
// into one outbox item (a start, then edits that supersede older pending ones), so a stream costs
// about one database write per second per session, never one per token.
import type { AgentEvent } from '../../core/events.js';
import type { SessionRecord } from '../../core/store.js';

/** One streamed message: the answer position it belongs to and the text to show. */
export interface AnswerStream {
  session: SessionRecord;
  segmentId: string;
  seq: number;
  /** The text so far, cut to the platform's room for one message. */
  text: string;
  /** A write of this stream was handed to the renderer (a platform message may exist). */
  started: boolean;
}

/** Tunables of AnswerStreams; times in milliseconds. */
export interface AnswerStreamOptions {
  /** Most characters shown while streaming (the final answer is split as usual). */
  maxChars: number;
  /** Least time between two writes of a stream (default 1,000). */
  intervalMs?: number;
  /** How long text must keep coming before the first write (default: intervalMs). */
  firstWriteAfterMs?: number;
  /** Runs a write in the session's order (the renderer's per-session chain). */
  schedule: (sessionId: string, write: () => Promise<void>) => void;
  /** Writes the stream's text: the first write of a position starts its message, later ones edit it. */
  write: (stream: AnswerStream, first: boolean) => Promise<void>;
  now?: () => number;
}

interface Live extends AnswerStream {
  firstDeltaAt: number;
  lastWriteAt: number;
  written: string;
  timer: NodeJS.Timeout | null;
}

/** The live streams of one renderer, one per session. */
export class AnswerStreams {
  private readonly live = new Map<string, Live>();
  private readonly intervalMs: number;
  private readonly firstWriteAfterMs: number;
  private readonly now: () => number;

  constructor(private readonly options: AnswerStreamOptions) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.firstWriteAfterMs = options.firstWriteAfterMs ?? this.intervalMs;
    this.now = options.now ?? Date.now;
  }

  /** Takes a text delta (synchronously: no I/O per token). */
  delta(event: Extract<AgentEvent, { type: 'text-delta' }>): void {
    const sessionId = event.session.id;
    let stream = this.live.get(sessionId);
    if (stream && (stream.segmentId !== event.segmentId || stream.seq !== event.seq)) {
      // A new position while the old one is open (its end was not seen): the old one is left as is.
      this.clear(stream);
      stream = undefined;
    }
    if (!stream) {
      stream = { session: event.session, segmentId: event.segmentId, seq: event.seq, text: '', started: false, firstDeltaAt: this.now(), lastWriteAt: 0, written: '', timer: null };
      this.live.set(sessionId, stream);
    }
    stream.text = event.text.length > this.options.maxChars ? event.text.slice(0, this.options.maxChars) : event.text;
    if (stream.timer || stream.text === stream.written || stream.text.trim() === '') return;
    const due = stream.started ? stream.lastWriteAt + this.intervalMs : stream.firstDeltaAt + this.firstWriteAfterMs;
    const live = stream;
    live.timer = setTimeout(() => this.flush(live), Math.max(0, due - this.now()));
    live.timer.unref();
  }

  /**
   * The model call of the session ended (an answer, tool calls, a failure or a stop): no more
   * writes; returns the stream when one was written, so the renderer can finish its message.
   */
  end(sessionId: string): AnswerStream | null {
    const stream = this.live.get(sessionId);
    if (!stream) return null;
    this.clear(stream);
    return stream.started ? { session: stream.session, segmentId: stream.segmentId, seq: stream.seq, text: stream.text, started: true } : null;
  }

  /** Writes every stream that has unwritten text now (shutdown). */
  flushAll(): void {
    for (const stream of this.live.values()) {
      if (stream.timer) {
        clearTimeout(stream.timer);
        this.flush(stream);
      }
    }
  }

  private flush(stream: Live): void {
    stream.timer = null;
    if (this.live.get(stream.session.id) !== stream || stream.text === stream.written) return;
    const first = !stream.started;
    stream.started = true;
    stream.lastWriteAt = this.now();
    stream.written = stream.text;
    const snapshot: AnswerStream = { session: stream.session, segmentId: stream.segmentId, seq: stream.seq, text: stream.text, started: true };
    this.options.schedule(stream.session.id, () => this.options.write(snapshot, first));
  }

  private clear(stream: Live): void {
    if (stream.timer) clearTimeout(stream.timer);
    stream.timer = null;
    if (this.live.get(stream.session.id) === stream) this.live.delete(stream.session.id);
  }
}

/** The outbox key of the streamed message of an answer position (the final answer names it as its target). */
export function streamKey(prefix: string, segmentId: string, seq: number): string {
  return `${prefix}stream:${segmentId}:${seq}`;
}

/** What a stream that ended without an answer says at its end. */
export function streamEndNote(reason: 'stopped' | 'interrupted', by?: string): string {
  return reason === 'stopped' ? `\n\n_(stopped${by ? ` by ${by}` : ''})_` : '\n\n_(interrupted)_';
}

/** Events that end a worker model call (and so its stream): an answer, tool calls, a failure, the run's end. */
export function endsModelCall(event: AgentEvent): boolean {
  return event.type === 'answer' || event.type === 'run-end' || event.type === 'error' || (event.type === 'assistant-message' && (event.message.tool_calls?.length ?? 0) > 0);
}

/**
 * The text a stream that ended without an answer keeps: what the model said before its tool
 * calls, or the text so far with a note (a failure, a Stop), within `maxChars` plus the note.
 */
export function closingText(stream: AnswerStream, event: AgentEvent, maxChars: number): string {
  if (event.type === 'assistant-message') {
    const said = typeof event.message.content === 'string' && event.message.content.trim() !== '' ? event.message.content : stream.text;
    return said.slice(0, maxChars);
  }
  const stopped = event.type === 'run-end' && event.reason === 'stopped';
  return `${stream.text}${streamEndNote(stopped ? 'stopped' : 'interrupted', event.type === 'run-end' ? event.stoppedBy : undefined)}`;
}
