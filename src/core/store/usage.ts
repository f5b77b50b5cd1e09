// What model calls cost: one row per call (R14), totals by model and role for spend caps.
import type { AgentRole } from '../messages.js';
import type { ThreadAddress } from './sessions.js';

export interface ModelCallRecord {
  sessionId: string;
  segmentId: string | null;
  memoryRunId: string | null;
  role: AgentRole;
  model: string;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Prompt tokens written to the prompt cache, where the provider reports them (else null or absent). */
  cacheWriteTokens?: number | null;
  latencyMs: number;
  error: string | null;
}

/** Usage so far for a session, by role. */
export type UsageSummary = Record<AgentRole, { calls: number; promptTokens: number; cachedTokens: number; completionTokens: number }>;

export interface UsageStore {
  record(call: ModelCallRecord): Promise<void>;
  summary(sessionId: string): Promise<UsageSummary>;
  /** Token totals by model and role in a scope (what was spent: each model has its own prices). */
  totals(scope: UsageScope): Promise<UsageTotal[]>;
  /** The context's size at each worker step, memory checkpoints and resets (the newest `limit` steps). */
  contextHistory(sessionId: string, limit: number): Promise<ContextHistory>;
}

/** One worker step of a session's context history: the prompt tokens its model call sent. */
export interface ContextStep {
  /** The segment (context) it was in: 1, 2, 3 … (a reset starts the next). */
  segment: number;
  tokens: number;
  /** A summarizer was forked after this step (a memory checkpoint). */
  memory: boolean;
}

/** The context's size over a session's life, for `status` (newest steps when there are many). */
export interface ContextHistory {
  steps: ContextStep[];
  /** Why each reset happened, by the segment it started ('context-full', R19; null: a decider or a person). */
  resets: Array<{ segment: number; reason: 'context-full' | null }>;
  /** Earlier steps left out of `steps`. */
  omitted: number;
}

/** Whose spend: a session (or one segment of it), or a channel since a moment (a day's budget). */
export type UsageScope =
  | { sessionId: string; segmentId?: string }
  | { channel: Pick<ThreadAddress, 'platform' | 'workspaceId' | 'channelId'>; since: Date };

/** Tokens of one model and role in a scope. */
export interface UsageTotal {
  model: string;
  role: AgentRole;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Absent when no call of the group reported cache writes. */
  cacheWriteTokens?: number | undefined;
}
