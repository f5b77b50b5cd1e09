// Measuring without touching src/: a recording wrapper around the agent's ModelClient, and timing
// probes installed on MemoryManager's prototype for the length of one benchmark run.
import { MemoryManager } from '../../src/core/memory/memory-manager.js';
import type { ModelClient } from '../../src/core/model-client.js';
import { compactionTag, type BenchRole } from './scenarios.js';

/** One model call as the agent made it. Times are performance.now() milliseconds. */
export interface CallRecord {
  role: BenchRole;
  cacheKey: string;
  startedAt: number;
  endedAt: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Prompt tokens written to the cache, where the provider bills them (Anthropic). */
  cacheWriteTokens?: number;
  /** Estimated tokens of the request's last message (a fork's role instruction). */
  lastMessageTokens: number;
  /** A summarizer's or decider's first call: its last message is the role instruction. */
  forkStart: boolean;
  failed: boolean;
}

/** Records every call that goes through the wrapped client. */
export class CallRecorder {
  readonly calls: CallRecord[] = [];

  wrap(inner: ModelClient): ModelClient {
    return {
      complete: async (request, options) => {
        const last = request.messages.at(-1);
        const lastText = typeof last?.content === 'string' ? last.content : '';
        const role: BenchRole = last?.role === 'user' && lastText.startsWith(compactionTag) ? 'compaction' : options.role;
        const record: CallRecord = {
          role,
          cacheKey: request.cacheKey,
          startedAt: performance.now(),
          endedAt: Number.NaN,
          promptTokens: 0,
          cachedTokens: 0,
          completionTokens: 0,
          lastMessageTokens: Math.ceil(JSON.stringify(last ?? null).length / 4),
          forkStart: role !== 'worker' && role !== 'compaction' && last?.role === 'user' && lastText.startsWith('<role-change'),
          failed: false,
        };
        this.calls.push(record);
        try {
          const response = await inner.complete(request, options);
          record.promptTokens = response.usage?.promptTokens ?? 0;
          record.cachedTokens = response.usage?.cachedTokens ?? 0;
          record.completionTokens = response.usage?.completionTokens ?? 0;
          if (response.usage?.cacheWriteTokens !== undefined) record.cacheWriteTokens = response.usage.cacheWriteTokens;
          return response;
        } catch (error) {
          record.failed = true;
          throw error;
        } finally {
          record.endedAt = performance.now();
        }
      },
    };
  }

  of(role: BenchRole): CallRecord[] {
    return this.calls.filter((call) => call.role === role);
  }
}

/** A time interval in performance.now() milliseconds. */
export interface Interval {
  start: number;
  end: number;
}

export interface MemoryProbe {
  /** Every MemoryManager.onCheckpoint call: the memory work on the worker's own path. */
  checkpoints: Interval[];
  /** Every wait of a reset for a running summarizer (MemoryManager.waitForSummarizer). */
  summarizerWaits: Interval[];
  /** Puts the original methods back. */
  restore(): void;
}

/**
 * Times MemoryManager.onCheckpoint and waitForSummarizer of every session in this process
 * by wrapping the prototype methods (restored by `restore`).
 */
export function probeMemoryManager(): MemoryProbe {
  const checkpoints: Interval[] = [];
  const summarizerWaits: Interval[] = [];
  const restores = [timeMethod('onCheckpoint', checkpoints), timeMethod('waitForSummarizer', summarizerWaits)];
  return { checkpoints, summarizerWaits, restore: () => {
    for (const restore of restores) restore();
  } };
}

/** Wraps a MemoryManager method so every call's interval lands in `intervals`; returns the undo. */
function timeMethod(name: 'onCheckpoint' | 'waitForSummarizer', intervals: Interval[]): () => void {
  const prototype = MemoryManager.prototype as unknown as Record<string, (...args: unknown[]) => Promise<void>>;
  const original = prototype[name];
  if (!original) throw new Error(`MemoryManager has no method ${name}`);
  // The wrapper passes the arguments on (onCheckpoint's options say whether it may fork).
  prototype[name] = async function timed(this: MemoryManager, ...args: unknown[]): Promise<void> {
    const interval = { start: performance.now(), end: Number.NaN };
    intervals.push(interval);
    try {
      await original.apply(this, args);
    } finally {
      interval.end = performance.now();
    }
  };
  return () => {
    prototype[name] = original;
  };
}
