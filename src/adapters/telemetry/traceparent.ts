// The W3C Trace Context `traceparent` header (version 00), the form a run's trace context is
// stored in on the session's row: "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
import { ROOT_CONTEXT, isSpanContextValid, trace, type Context, type Span } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span's traceparent, or null for a span that is not recorded anywhere (invalid context). */
export function traceparentOf(span: Span): string | null {
  const context = span.spanContext();
  if (!isSpanContextValid(context)) return null;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A remote parent context from a stored traceparent; null when absent or malformed. */
export function contextFromTraceparent(value: string | null | undefined): Context | null {
  const match = value ? TRACEPARENT.exec(value.trim()) : null;
  if (!match?.[1] || !match[2] || !match[3]) return null;
  const spanContext = { traceId: match[1], spanId: match[2], traceFlags: Number.parseInt(match[3], 16), isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : null;
}
