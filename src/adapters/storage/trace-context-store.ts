// The run's trace context on the session's row (traces, src/adapters/telemetry/run-traces.ts).
import type { PrismaClient } from '../../../prisma/generated/client.js';

/**
 * Stores (or clears, with null) the traceparent of a session's run under way. Written beside the
 * row's other columns without touching them: the session's flags stay as the runner left them.
 */
export function traceContextStore(prisma: PrismaClient): (sessionId: string, traceparent: string | null) => Promise<void> {
  return async (sessionId, traceparent) => {
    await prisma.$executeRaw`UPDATE sessions SET trace_context = ${traceparent} WHERE id = ${sessionId}`;
  };
}
