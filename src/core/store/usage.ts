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
