// The context object every core piece takes (docs/style.md §2): settings, stores, model, tools, events.
import type { ApprovalSettings } from './approval-policy.js';
import type { AttachmentSaver } from './attachment-saver.js';
import { imageLimitsFor, type ProviderImageLimits } from './image-limits.js';
import type { EventBus } from './events.js';
import type { Log } from './log.js';
import type { ModelClient } from './model-client.js';
import type { ModelPrices } from './prices.js';
import type { LeaseStore, MemoryScope, Stores, Wakeups } from './store.js';
import type { ToolSet } from './tool.js';

/** Tunables of the agent; defaults come from config (src/config.ts). */
export interface AgentSettings {
  model: string;
  /** Model context window in tokens. */
  contextWindow: number;
  /** R2: memory runs fire every time usage grows by this many percent of the window. */
  stepPercent: number;
  /**
   * Decider policy (cost): no decider below this percent of the window (a reset there frees
   * little), and above it one every `deciderEvery` triggered steps. The summarizer keeps every step.
   */
  deciderFloorPercent: number;
  deciderEvery: number;
  /**
   * A fork sends its first request once the worker's next call has been read by the provider (its
   * first chunk arrived), so the newest step is in the prompt cache too; at most this long (ms;
   * 0: at once). The worker never waits for it.
   */
  forkAfterWorkerPrefillMs: number;
  /** Prices of `model` overriding the built-in table (MODEL_PRICES); null: the table's, if any. */
  prices: ModelPrices | null;
  /** Spend caps in US dollars (SESSION_BUDGET_USD, CHANNEL_DAILY_BUDGET_USD); null: no cap. */
  sessionBudgetUsd: number | null;
  channelDailyBudgetUsd: number | null;
  memoryScope: MemoryScope;
  /**
   * R6: with a reset pending, the worker goes on while a summarizer runs, except once the context
   * is this full (percent of the window): then it stops at its next checkpoint and waits.
   */
  resetWaitPercent: number;
  /**
   * R19: when the next worker call reaches this percent of the window and no reset is pending, the
   * system asks for the reset itself (room is left for a fork's instruction and the answer).
   */
  hardLimitPercent: number;
  /**
   * R20: the carry-over of a reset fits this percent of the window (older tool results become
   * stubs; then a summarizer over them; then the oldest messages stay in the archive only).
   */
  carryBudgetPercent: number;
  /**
   * R21: a run stops, as if paused, before its worker would call the model more than this many
   * times (RUN_MAX_STEPS); a person's reply or resume continues it with a fresh count.
   */
  runMaxSteps: number;
  /** A storage outage a session has waited out for this long gets one note in its thread (ms). */
  storageOutageNoteMs: number;
  /**
   * At most this many session runners of the process orchestrate (database and CPU work) at
   * once; model calls and tools run outside the limit. Keeps the event loop responsive in a burst.
   */
  runnerSlots: number;
  /** R4: summarizer caps. */
  summarizerMaxSteps: number;
  summarizerTimeoutMs: number;
  /** R5: a decider that keeps calling tools gives up after this many steps. */
  deciderMaxSteps: number;
  deciderTimeoutMs: number;
  /** A decider's answer cap in tokens (one or two sentences and a line; reasoning models need room). */
  deciderMaxOutputTokens: number;
  /** Name of the platform shown in the system prompt. */
  platformName: (platform: string) => string;
  /** The model accepts image parts (a capability of `model`, or MODEL_IMAGES): images are shown, not only described. */
  images: boolean;
  /** R22: what the provider takes as an image (image-limits.ts); images tools return are checked against it. */
  imageLimits: ProviderImageLimits;
  /** Images one request shows, the latest first (older ones are described in text). */
  requestMaxImages: number;
  /** Bytes of images one request shows (older images beyond it are described in text). */
  requestMaxImageBytes: number;
  /** Characters a request may hold, counted before it is serialized; a larger one is not sent. */
  requestMaxChars: number;
}

export const defaultAgentSettings: Omit<AgentSettings, 'model' | 'contextWindow'> = {
  stepPercent: 3,
  deciderFloorPercent: 0,
  deciderEvery: 1,
  forkAfterWorkerPrefillMs: 10_000,
  prices: null,
  sessionBudgetUsd: null,
  channelDailyBudgetUsd: null,
  memoryScope: 'channel',
  resetWaitPercent: 90,
  hardLimitPercent: 85,
  carryBudgetPercent: 30,
  runMaxSteps: 50,
  storageOutageNoteMs: 10_000,
  runnerSlots: 8,
  summarizerMaxSteps: 24,
  summarizerTimeoutMs: 5 * 60_000,
  deciderMaxSteps: 3,
  deciderTimeoutMs: 2 * 60_000,
  deciderMaxOutputTokens: 1_024,
  platformName: (platform) => ({ slack: 'Slack', discord: 'Discord', console: 'a terminal chat' })[platform] ?? platform,
  images: false,
  imageLimits: imageLimitsFor('openai', 8),
  requestMaxImages: 8,
  requestMaxImageBytes: 20 * 1024 * 1024,
  requestMaxChars: 64 * 1024 * 1024,
};

/** Clock and id sources, injectable for tests. */
export interface Clock {
  now(): Date;
}

/**
 * What this process does among the replicas on one database: `all` takes people's messages and
 * drives sessions; `ingest` stores messages and commands but never drives (it never claims a
 * lease); `worker` drives, and takes up any session it hears a wake-up for (no replica that
 * received the message will).
 */
export type ProcessRole = 'all' | 'ingest' | 'worker';

/** How this process takes part among replicas (one driver per session, R10). */
export interface ReplicaSettings {
  /** Absent: `all`. */
  role?: ProcessRole;
  /** This replica's name in session leases (unique per process). */
  owner: string;
  leases: LeaseStore;
  wakeups: Wakeups;
  /** A lease not renewed for this long is free for another replica. */
  leaseTtlMs: number;
  /** How often every replica looks for sessions whose driver died. */
  sweepIntervalMs: number;
  /** How long a runner keeps its lease after going idle (0: release at once). */
  leaseIdleGraceMs: number;
}

export interface AgentDeps {
  settings: AgentSettings;
  replica: ReplicaSettings;
  stores: Stores;
  model: ModelClient;
  tools: ToolSet;
  events: EventBus;
  log: Log;
  clock: Clock;
  /** Saves files shared with messages into session workspaces; absent: they are only named. */
  attachments?: AttachmentSaver;
  /** R23: which tool calls wait for a person, and for how long; absent: none does. */
  approvals?: ApprovalSettings;
}
