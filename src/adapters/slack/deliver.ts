// Sends outbox items to the Slack Web API with the token of the item's workspace (its payload's
// `team`, else its session's), and turns Slack's errors into the outbox's terms: rate limits carry
// Retry-After, refusals that cannot change are permanent, an uninstalled workspace is permanent.
// Also learns, once per workspace, what it allows: `markdown_text` posts and assistant thread statuses. Posts carry their
// idempotency key in message metadata, so a retried post that already reached Slack (its sender
// died before recording it) is found in the thread instead of being posted twice.
import { webApi } from '@slack/bolt';
import { z } from 'zod';
import { PlatformError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { PermanentPlatformError, type Deliver, type OutboxDelivery } from '../chat/outbox-sender.js';
import type { SlackWorkspaces } from './workspaces.js';

const postPayload = z.looseObject({
  channel: z.string(),
  thread_ts: z.string().optional(),
  /** Markdown text: sent as markdown_text, or converted to mrkdwn where Slack refuses that. */
  markdown: z.string().optional(),
  text: z.string().optional(),
  blocks: z.array(z.unknown()).optional(),
  metadata: z.looseObject({ event_type: z.string(), event_payload: z.record(z.string(), z.unknown()) }).optional(),
});
const updatePayload = z.looseObject({ channel: z.string(), text: z.string(), blocks: z.array(z.unknown()).optional() });
const messageResult = z.looseObject({ ts: z.string().optional() });
const historyPage = z.looseObject({
  messages: z.array(z.looseObject({
    ts: z.string(),
    metadata: z.looseObject({ event_payload: z.record(z.string(), z.unknown()).optional() }).optional(),
  })).optional(),
  response_metadata: z.looseObject({ next_cursor: z.string().optional() }).optional(),
});
const reactionPayload = z.looseObject({ channel: z.string(), timestamp: z.string(), name: z.string() });

/** The metadata event type of posts that have no metadata of their own. */
export const outboxMetadataType = 'hippo_outbox';
/** The event_payload field that holds a post's outbox idempotency key. */
export const idempotencyKeyField = 'idempotency_key';
/** How far back a retried post looks for itself: pages of replies, and messages per page. */
const lookupPages = 5;
const lookupPageSize = 200;
/** Top-level posts: the channel's latest messages checked. */
const historyLookupSize = 50;

/** Slack errors that will not go away by trying again. */
const permanentErrors = new Set([
  'channel_not_found', 'not_in_channel', 'is_archived', 'msg_too_long', 'no_text', 'invalid_blocks', 'invalid_arguments',
  'message_not_found', 'cant_update_message', 'edit_window_closed', 'invalid_auth', 'not_authed', 'account_inactive',
  'token_revoked', 'missing_scope', 'restricted_action', 'thread_not_found', 'invalid_metadata_format',
]);
/** Errors from a `markdown_text` post that mean "not here": post mrkdwn instead from now on. */
const markdownRefusals = new Set(['invalid_arguments', 'markdown_text_not_supported', 'invalid_markdown', 'unknown_method', 'not_allowed']);

/** An item's payload names its workspace in this field (removed before the call). */
export const teamField = 'team';

/** The client of one delivery and the workspace it belongs to ('' with one fixed token). */
interface Target {
  client: webApi.WebClient;
  team: string;
}

/** The Slack side of the outbox plus the one-time capability detection. */
export class SlackDelivery {
  /** Per workspace; absent until the first markdown post tells. */
  private readonly markdownAccepted = new Map<string, boolean>();
  /** Workspaces where Slack refused assistant thread statuses. */
  private readonly statusRefused = new Set<string>();

  constructor(
    private readonly workspaces: SlackWorkspaces,
    /** The workspace of a session (items enqueued before payloads named their team). */
    private readonly teamOfSession: (sessionId: string) => Promise<string | null>,
    private readonly log: Logger,
  ) {}

  /** The outbox deliver function. */
  readonly deliver: Deliver = async (delivery) => {
    const { target, item } = await this.target(delivery);
    switch (item.operation) {
      case 'post':
        return { platformMessageId: await this.post(target, item) };
      case 'update': {
        const payload = updatePayload.parse(item.payload);
        await this.call(target, 'chat.update', { ...payload, ts: item.targetMessageId });
        return {};
      }
      case 'react':
      case 'unreact':
        await this.react(target, item);
        return {};
      default:
        throw new PermanentPlatformError('slack', item.operation, `unknown outbox operation "${item.operation}"`);
    }
  };

  /** Sets the assistant thread status ("is thinking…"); quietly stops where Slack does not allow it. */
  async setThreadStatus(teamId: string, channelId: string, threadTs: string, status: string): Promise<void> {
    if (this.statusRefused.has(teamId)) return;
    const workspace = await this.workspaces.get(teamId);
    if (!workspace) return;
    try {
      await workspace.client.apiCall('assistant.threads.setStatus', { channel_id: channelId, thread_ts: threadTs, status });
    } catch (error) {
      const code = platformErrorCode(error);
      if (code === null || code === 'ratelimited') return;
      // Outside assistant threads (or without the scope) Slack refuses; detect once, then stop asking.
      this.statusRefused.add(teamId);
      this.log.info({ teamId, error: code }, 'slack-thread-status-unavailable');
    }
  }

  /** The item without its `team` field, and the client of that team. */
  private async target(delivery: OutboxDelivery): Promise<{ target: Target; item: OutboxDelivery }> {
    const { [teamField]: named, ...payload } = isObject(delivery.payload) ? delivery.payload : {};
    const team = typeof named === 'string' ? named : delivery.sessionId !== null && !this.workspaces.single ? await this.teamOfSession(delivery.sessionId) : null;
    const workspace = await this.workspaces.get(team ?? '');
    // The workspace uninstalled Hippo (or revoked its token): nothing will ever reach it again.
    if (!workspace) throw new PermanentPlatformError('slack', delivery.operation, team ? 'workspace_not_installed' : 'workspace_unknown');
    return { target: { client: workspace.client, team: team ?? '' }, item: { ...delivery, payload } };
  }

  private async post(target: Target, item: OutboxDelivery): Promise<string> {
    const { markdown, ...parsed } = postPayload.parse(item.payload);
    const payload = { ...parsed, metadata: withIdempotencyKey(parsed.metadata, item.idempotencyKey) };
    // An earlier attempt may have reached Slack before its sender died (or lost the answer).
    if (item.attempt > 1) {
      const found = await this.findPosted(target, payload.channel, payload.thread_ts, item.idempotencyKey);
      if (found !== null) {
        this.log.info({ key: item.idempotencyKey, ts: found, attempt: item.attempt }, 'slack-post-already-sent');
        return found;
      }
    }
    if (markdown === undefined) return this.call(target, 'chat.postMessage', payload);
    const accepted = this.markdownAccepted.get(target.team);
    if (accepted !== false) {
      try {
        const ts = await this.call(target, 'chat.postMessage', { ...payload, markdown_text: markdown });
        this.markdownAccepted.set(target.team, true);
        return ts;
      } catch (error) {
        const code = error instanceof PlatformError ? error.message : '';
        if (accepted === true || !markdownRefusals.has(code)) throw error;
        this.markdownAccepted.set(target.team, false);
        this.log.info({ teamId: target.team, error: code }, 'slack-markdown-text-refused: posting mrkdwn from now on');
      }
    }
    return this.call(target, 'chat.postMessage', { ...payload, text: markdownToMrkdwn(markdown), mrkdwn: true });
  }

  /**
   * The ts of a message in the thread (or, for top-level posts, among the channel's latest ones)
   * whose metadata names the key; null when there is none. A failed look-up is not a reason to
   * stop delivering: it posts (at least once) unless Slack asked to slow down.
   */
  private async findPosted(target: Target, channel: string, threadTs: string | undefined, key: string): Promise<string | null> {
    const method = threadTs === undefined ? 'conversations.history' : 'conversations.replies';
    try {
      if (threadTs === undefined) {
        const page = historyPage.parse(await target.client.apiCall(method, { channel, limit: historyLookupSize, include_all_metadata: true }));
        return matchingTs(page, key);
      }
      let cursor: string | undefined;
      for (let pageNumber = 0; pageNumber < lookupPages; pageNumber += 1) {
        const page = historyPage.parse(await target.client.apiCall(method, {
          channel, ts: threadTs, limit: lookupPageSize, include_all_metadata: true, ...(cursor ? { cursor } : {}),
        }));
        const found = matchingTs(page, key);
        if (found !== null) return found;
        cursor = page.response_metadata?.next_cursor || undefined;
        if (!cursor) return null;
      }
      return null;
    } catch (error) {
      const failure = toPlatformError(method, error);
      if (failure.message === 'ratelimited') throw failure;
      this.log.warn({ key, err: failure.message }, 'slack-post-lookup-failed: posting anyway');
      return null;
    }
  }

  private async react(target: Target, item: OutboxDelivery): Promise<void> {
    const payload = reactionPayload.parse(item.payload);
    const adding = item.operation === 'react';
    try {
      await this.call(target, adding ? 'reactions.add' : 'reactions.remove', payload);
    } catch (error) {
      const code = error instanceof PlatformError ? error.message : '';
      // Already in the wanted state: the reaction's purpose is met.
      if ((adding && code === 'already_reacted') || (!adding && code === 'no_reaction')) return;
      throw error;
    }
  }

  /** Calls a Web API method; returns the message ts when there is one. Throws PlatformError. */
  private async call(target: Target, method: string, args: Record<string, unknown>): Promise<string> {
    try {
      const result = await target.client.apiCall(method, args);
      return messageResult.parse(result).ts ?? '';
    } catch (error) {
      throw toPlatformError(method, error);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The post's metadata with the outbox key added (its own event type and fields kept). */
function withIdempotencyKey(metadata: { event_type: string; event_payload: Record<string, unknown> } | undefined, key: string) {
  if (!metadata) return { event_type: outboxMetadataType, event_payload: { [idempotencyKeyField]: key } };
  return { ...metadata, event_payload: { ...metadata.event_payload, [idempotencyKeyField]: key } };
}

function matchingTs(page: z.infer<typeof historyPage>, key: string): string | null {
  const message = (page.messages ?? []).find((candidate) => candidate.metadata?.event_payload?.[idempotencyKeyField] === key);
  return message?.ts ?? null;
}

/** Maps a Web API client error to PlatformError (message = Slack's error code). */
export function toPlatformError(method: string, error: unknown): PlatformError {
  if (error instanceof Error && 'code' in error) {
    switch (error.code) {
      case webApi.ErrorCode.RateLimitedError: {
        const seconds = 'retryAfter' in error && typeof error.retryAfter === 'number' ? error.retryAfter : 1;
        return new PlatformError('slack', method, 'ratelimited', seconds * 1000, { cause: error });
      }
      case webApi.ErrorCode.PlatformError: {
        const code = platformErrorCode(error) ?? 'unknown_error';
        const ErrorClass = permanentErrors.has(code) ? PermanentPlatformError : PlatformError;
        return new ErrorClass('slack', method, code, undefined, { cause: error });
      }
      default:
        break;
    }
  }
  return new PlatformError('slack', method, error instanceof Error ? error.message : String(error), undefined, { cause: error });
}

/** Slack's error code of a platform error (e.g. "not_allowed"), else null. */
export function platformErrorCode(error: unknown): string | null {
  if (!(error instanceof Error) || !('code' in error) || error.code !== webApi.ErrorCode.PlatformError) return null;
  const data = 'data' in error ? error.data : undefined;
  const code = typeof data === 'object' && data !== null && 'error' in data ? data.error : undefined;
  return typeof code === 'string' ? code : 'unknown_error';
}
