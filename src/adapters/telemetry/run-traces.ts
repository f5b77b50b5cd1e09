// Spans of what the agent does, made from the events core emits and from the model calls it makes
// (the same two seams /metrics uses), so core knows nothing of tracing. One trace per run of a
// session: the run span (invoke_agent), its model calls (chat, in the GenAI semantic conventions),
// tool calls (execute_tool), memory forks (the summarizer and decider: children of the run that
// forked them, their model calls their children) and resets. The run's traceparent is stored on
// the session's row while it is under way, so a run another process takes over (a crash, a
// shutdown, a lost lease) or the run after a reset continues the same trace.
// Without content capture a span carries ids, names, counts and outcomes: never message, tool
// argument, tool result or document text.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { AgentEvent, EventBus, StopReason } from '../../core/events.js';
import type { AgentRole } from '../../core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from '../../core/model-client.js';
import { contextFromTraceparent, traceparentOf } from './traceparent.js';

export interface RunTracesOptions {
  tracer: Tracer;
  captureContent: boolean;
  /** `gen_ai.provider.name`: openai or anthropic (MODEL_PROVIDER). */
  provider: string;
  /** Stores the traceparent of the session's run under way (null: none); failures are the store's to log. */
  saveContext: (sessionId: string, traceparent: string | null) => Promise<void>;
}

/** Run ends after which the session is quiet: a later run starts a new trace. */
const quietReasons: ReadonlySet<StopReason> = new Set(['idle', 'paused', 'stopped', 'step-limit', 'error', 'budget']);
/** Content captured into one attribute is cut at this many characters. */
const MAX_CAPTURED_CHARS = 16_384;
/** Sessions remembered (their stored context and the spans they have open). */
const MAX_SESSIONS = 10_000;

interface SessionSpans {
  run: { span: Span; context: Context; askedBy: boolean } | null;
  /** The context of the last run, for a reset or a fork that comes after it ended. */
  last: Context | null;
  /** The traceparent this process last stored for the session (null: cleared). */
  stored: string | null;
  /** Traceparents this process wrote or continued: the row's copy of one of them is no news. */
  known: string[];
  memory: Map<string, { span: Span; role: Exclude<AgentRole, 'worker'>; context: Context }>;
  /** The context of the newest memory run per role: its model calls are its children. */
  forks: Map<AgentRole, Context>;
  tools: Map<string, Span>;
  /** When the run that stopped for a reset ended: the reset span starts there. */
  resetFrom: number | null;
}

export class RunTraces {
  private readonly sessions = new Map<string, SessionSpans>();
  /** Stored writes of one session, in order (a clear never overtakes the set before it). */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly options: RunTracesOptions) {}

  /** Listens to the agent's events; returns the function that stops listening. */
  subscribe(events: EventBus): () => void {
    return events.subscribe((event) => this.onEvent(event));
  }

  /** Wraps a model client so each call is a `chat` span under the run or fork that made it. */
  instrument(client: ModelClient): ModelClient {
    return {
      complete: async (request: ModelRequest, callOptions: ModelCallOptions): Promise<ModelResponse> => {
        const span = this.options.tracer.startSpan(`chat ${request.model}`, {
          kind: SpanKind.CLIENT,
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': this.options.provider,
            'gen_ai.request.model': request.model,
            'gen_ai.conversation.id': request.cacheKey,
            'hippo.role': callOptions.role,
            'hippo.request.messages': request.messages.length,
            ...(request.maxOutputTokens === undefined ? {} : { 'gen_ai.request.max_tokens': request.maxOutputTokens }),
          },
        }, this.modelCallParent(request.cacheKey, callOptions.role));
        if (this.options.captureContent) span.setAttribute('gen_ai.input.messages', captured(request.messages.slice(-1)));
        try {
          const response = await client.complete(request, callOptions);
          const usage = response.usage;
          if (usage) {
            span.setAttributes({
              'gen_ai.usage.input_tokens': usage.promptTokens,
              'gen_ai.usage.output_tokens': usage.completionTokens,
              'gen_ai.usage.cache_read.input_tokens': usage.cachedTokens,
              ...(usage.cacheWriteTokens === undefined ? {} : { 'gen_ai.usage.cache_creation.input_tokens': usage.cacheWriteTokens }),
            });
          }
          const calls = response.message.tool_calls?.length ?? 0;
          span.setAttribute('gen_ai.response.finish_reasons', [calls > 0 ? 'tool_calls' : 'stop']);
          if (this.options.captureContent) span.setAttribute('gen_ai.output.messages', captured([response.message]));
          return response;
        } catch (error) {
          // The error's class only: a provider's message may quote the request.
          failed(span, error instanceof Error ? error.name : 'error');
          throw error;
        } finally {
          span.end();
        }
      },
    };
  }

  /** Waits for the stored contexts being written (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.writes.values()]);
  }

  private onEvent(event: AgentEvent): void {
    switch (event.type) {
      case 'run-start':
        return this.runStart(event);
      case 'run-end':
        return this.runEnd(event.session.id, event.reason);
      case 'steer-taken': {
        const run = this.sessions.get(event.session.id)?.run;
        const first = event.steers[0];
        if (run && first && !run.askedBy) {
          run.askedBy = true;
          run.span.setAttribute('hippo.run.asked_by', first.authorId);
        }
        return;
      }
      case 'tool-call-start': {
        const spans = this.spans(event.session.id);
        const name = event.call.function.name;
        const span = this.options.tracer.startSpan(`execute_tool ${name}`, {
          kind: SpanKind.INTERNAL,
          attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.id': event.call.id, 'hippo.role': 'worker' },
        }, spans.run?.context ?? spans.last ?? ROOT_CONTEXT);
        if (this.options.captureContent) span.setAttribute('gen_ai.tool.call.arguments', cut(event.call.function.arguments));
        spans.tools.get(event.call.id)?.end();
        spans.tools.set(event.call.id, span);
        return;
      }
      case 'tool-call-end': {
        const spans = this.sessions.get(event.session.id);
        const span = spans?.tools.get(event.call.id);
        if (!spans || !span) return;
        spans.tools.delete(event.call.id);
        span.setAttribute('hippo.tool.outcome', event.ok ? 'ok' : 'error');
        if (this.options.captureContent) span.setAttribute('gen_ai.tool.call.result', cut(event.result));
        if (!event.ok) failed(span, 'tool_error');
        span.end();
        return;
      }
      case 'memory-run-start': {
        const spans = this.spans(event.session.id);
        const parent = spans.run?.context ?? spans.last ?? contextFromTraceparent(spans.stored ?? event.session.traceContext ?? null) ?? ROOT_CONTEXT;
        const span = this.options.tracer.startSpan(`invoke_agent ${event.role}`, {
          kind: SpanKind.INTERNAL,
          attributes: {
            'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': `hippo ${event.role}`, 'gen_ai.conversation.id': event.session.id,
            'hippo.role': event.role, 'hippo.memory_run.id': event.memoryRunId, 'hippo.memory_run.round': event.round,
          },
        }, parent);
        const context = trace.setSpan(parent, span);
        spans.memory.set(event.memoryRunId, { span, role: event.role, context });
        spans.forks.set(event.role, context);
        return;
      }
      case 'memory-run-end': {
        const spans = this.sessions.get(event.session.id);
        const run = spans?.memory.get(event.memoryRunId);
        if (!spans || !run) return;
        spans.memory.delete(event.memoryRunId);
        if (spans.forks.get(run.role) === run.context) spans.forks.delete(run.role);
        run.span.setAttribute('hippo.memory_run.status', event.status);
        if (event.decision) run.span.setAttribute('hippo.decider.decision', event.decision);
        if (event.status === 'failed') failed(run.span, 'memory_run_failed');
        run.span.end();
        return;
      }
      case 'context-reset': {
        const spans = this.spans(event.session.id);
        const parent = spans.run?.context ?? spans.last ?? contextFromTraceparent(spans.stored ?? event.session.traceContext ?? null) ?? ROOT_CONTEXT;
        const span = this.options.tracer.startSpan('context_reset', {
          kind: SpanKind.INTERNAL,
          startTime: spans.resetFrom ?? Date.now(),
          attributes: {
            'hippo.reset.reason': event.reason ?? 'requested',
            'hippo.reset.tokens_before': event.tokensBefore,
            'hippo.reset.tokens_after': event.tokensAfter,
            'hippo.reset.messages_carried': event.carriedMessages,
            'hippo.segment.ordinal': event.segmentOrdinal,
            'gen_ai.conversation.id': event.session.id,
          },
        }, parent);
        spans.resetFrom = null;
        span.end();
        return;
      }
      default:
        return;
    }
  }

  private runStart(event: Extract<AgentEvent, { type: 'run-start' }>): void {
    const { session } = event;
    const spans = this.spans(session.id);
    spans.run?.span.end(); // a run-end that never came
    const fromRow = session.traceContext ?? null;
    // The row's copy is news only when another process wrote it (this one knows its own).
    const carried = fromRow !== null && !spans.known.includes(fromRow) ? fromRow : spans.stored;
    const parent = contextFromTraceparent(carried) ?? ROOT_CONTEXT;
    const span = this.options.tracer.startSpan('invoke_agent hippo', {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'hippo', 'gen_ai.conversation.id': session.id,
        'hippo.session.id': session.id, 'hippo.platform': session.platform, 'hippo.run.continued': carried !== null,
        ...(session.startedBy ? { 'hippo.session.started_by': session.startedBy } : {}),
      },
    }, parent);
    const context = trace.setSpan(parent, span);
    spans.run = { span, context, askedBy: false };
    if (carried !== null) remember(spans, carried);
    const traceparent = traceparentOf(span);
    if (traceparent) this.store(session.id, spans, traceparent);
  }

  private runEnd(sessionId: string, reason: StopReason): void {
    const spans = this.sessions.get(sessionId);
    const run = spans?.run;
    if (!spans || !run) return;
    run.span.setAttribute('hippo.run.end_reason', reason);
    if (reason === 'error') failed(run.span, 'run_failed');
    run.span.end();
    spans.run = null;
    spans.last = run.context;
    spans.resetFrom = reason === 'reset' ? Date.now() : null;
    if (quietReasons.has(reason) && spans.stored !== null) this.store(sessionId, spans, null);
  }

  private store(sessionId: string, spans: SessionSpans, traceparent: string | null): void {
    spans.stored = traceparent;
    if (traceparent !== null) remember(spans, traceparent);
    const previous = this.writes.get(sessionId) ?? Promise.resolve();
    const write = previous.then(() => this.options.saveContext(sessionId, traceparent)).catch(() => undefined);
    this.writes.set(sessionId, write);
    void write.then(() => {
      if (this.writes.get(sessionId) === write) this.writes.delete(sessionId);
    });
  }

  private modelCallParent(sessionId: string, role: AgentRole): Context {
    const spans = this.sessions.get(sessionId);
    if (!spans) return ROOT_CONTEXT;
    const fork = role === 'worker' ? undefined : spans.forks.get(role);
    return fork ?? spans.run?.context ?? spans.last ?? ROOT_CONTEXT;
  }

  private spans(sessionId: string): SessionSpans {
    let spans = this.sessions.get(sessionId);
    if (spans) {
      // Most recently used last: the oldest quiet sessions are forgotten first.
      this.sessions.delete(sessionId);
      this.sessions.set(sessionId, spans);
      return spans;
    }
    spans = { run: null, last: null, stored: null, known: [], memory: new Map(), forks: new Map(), tools: new Map(), resetFrom: null };
    this.sessions.set(sessionId, spans);
    if (this.sessions.size > MAX_SESSIONS) this.forgetOldest();
    return spans;
  }

  private forgetOldest(): void {
    for (const [id, spans] of this.sessions) {
      if (this.sessions.size <= MAX_SESSIONS) return;
      if (!spans.run && spans.memory.size === 0 && spans.tools.size === 0) this.sessions.delete(id);
    }
  }
}

function remember(spans: SessionSpans, traceparent: string): void {
  if (spans.known.includes(traceparent)) return;
  spans.known.push(traceparent);
  if (spans.known.length > 8) spans.known.shift();
}

function failed(span: Span, type: string): void {
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

function captured(value: unknown): string {
  return cut(JSON.stringify(value));
}

function cut(text: string): string {
  return text.length > MAX_CAPTURED_CHARS ? `${text.slice(0, MAX_CAPTURED_CHARS)}…` : text;
}
