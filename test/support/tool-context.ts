// A ToolContext for calling tools directly in tests.
import type { ToolContext } from '../../src/core/tool.js';

/** A worker's context in session "s1", with a live signal; override any field. */
export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    role: 'worker',
    sessionId: 's1',
    segmentId: 'g1',
    memorySpaceId: 'm1',
    contextWindow: 128_000,
    signal: new AbortController().signal,
    ...overrides,
  };
}
