// Sessions: a conversation's thread on its platform, its flags (R6, R8, R11, R21) and budgets.
import type { Platform } from '../places.js';

/** Where a session lives on its platform. */
export interface ThreadAddress {
  platform: Platform;
  /** Slack team id, Discord guild id ("@me" for DMs), "local" for the console. */
  workspaceId: string;
  channelId: string;
  /** Slack thread_ts, Discord thread (or DM channel) id. */
  threadKey: string;
  /**
   * Who can read the conversation; decides which memory space a new session may share: a direct
   * conversation has a space of its own, a private one never shares with public ones. Unset: public.
   */
  visibility?: Visibility;
}

/**
 * Who can read a conversation: everyone in the workspace, its members only, one person and Hippo,
 * only the people invited to a thread (a Discord private thread: a conversation of its own
 * inside a channel, so its memory space is its own under every scope), or people the workspace's
 * shared memory is not for (`shared`: a Slack Connect channel, or a session a guest or someone
 * from another organisation started), which never runs on the space all public channels share.
 */
export type Visibility = 'public' | 'private' | 'direct' | 'invited' | 'shared';

/** A session as core sees it. */
export interface SessionRecord extends ThreadAddress {
  id: string;
  memorySpaceId: string;
  title: string;
  /** Platform user id of the person whose message started the session; null when not recorded. */
  startedBy: string | null;
  /** R11: a person asked for a pause, effective at the next checkpoint. */
  pauseRequested: boolean;
  /** R11: stopped until resume or a steer message. */
  paused: boolean;
  /** R6: a reset was decided and is not finished; it is for the current segment (a reset clears it). */
  resetRequested: boolean;
  /** The segment the session is in now (the truth replicas check their mirrors against). */
  currentSegmentId: string | null;
  /** This session's spend cap in US dollars when a person raised it; null: the configured one. */
  budgetUsd: number | null;
  /** A person pressed Stop (their name) and the driver has not stopped yet; null otherwise. */
  stopRequestedBy: string | null;
  /** R21: the session's worker model calls so far, all runs together. */
  workerSteps: number;
  /** R21: `workerSteps` when the current run began (a person's message taken, or a resume). */
  runStartStep: number;
  /**
   * The W3C traceparent of the run under way, when traces are on: a run that another process
   * starts after a crash, a hand-over or a reset continues its trace. Null or absent: none.
   */
  traceContext?: string | null;
}

export type SessionFlags = Pick<SessionRecord, 'pauseRequested' | 'paused' | 'resetRequested' | 'stopRequestedBy' | 'runStartStep'>;

export interface SessionStore {
  find(address: ThreadAddress): Promise<SessionRecord | null>;
  get(sessionId: string): Promise<SessionRecord | null>;
  setFlags(sessionId: string, flags: Partial<SessionFlags>): Promise<void>;
  /**
   * R8: stores a pending reset unless one is pending already or, when `segmentId` is given, the
   * session is no longer in that segment (a decider of an ended segment). True when stored.
   */
  requestReset(sessionId: string, segmentId: string | null): Promise<boolean>;
  /** Sets this session's spend cap (a person raised it). */
  setBudget(sessionId: string, usd: number): Promise<void>;
  /** Sessions that have work to do without a new message: queued steers or an unfinished tail. */
  withBacklog(): Promise<string[]>;
  /** The channel's most recently started session, or null. */
  latestInChannel(channel: Pick<ThreadAddress, 'platform' | 'workspaceId' | 'channelId'>): Promise<SessionRecord | null>;
}
