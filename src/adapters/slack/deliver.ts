// Sends outbox items to the Slack Web API, and turns Slack's errors into the outbox's terms:
// rate limits carry Retry-After, refusals that cannot change are permanent. Also learns, once, whether
// this workspace allows `markdown_text` posts, and per thread whether it shows a thread status. Posts carry their
// idempotency key in message metadata, so a retried post that already reached Slack (its sender
// died before recording it) is found in the thread instead of being posted twice.
import { webApi } from '@slack/bolt';
import { z } from 'zod';
import { PlatformError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import { ToolError } from '../../core/errors.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { uploadToThread } from './files.js';
import { PermanentPlatformError, type Deliver, type OutboxDelivery } from '../chat/outbox-sender.js';
import { SlackStreams, streamOperations } from './stream-delivery.js';

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
const uploadPayload = z.looseObject({ channel: z.string(), thread_ts: z.string(), sessionId: z.string(), path: z.string() });

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
/** Threads whose status refusal is remembered, at most (the oldest is forgotten first). */
const refusedThreadsKept = 10_000;

/** Errors from a `markdown_text` post that mean "not here": post mrkdwn instead from now on. */
const markdownRefusals = new Set(['invalid_arguments', 'markdown_text_not_supported', 'invalid_markdown', 'unknown_method', 'not_allowed']);

/** The Slack side of the outbox plus the one-time capability detection. */
export class SlackDelivery {
  /** null until the first markdown post tells. */
  private markdownAccepted: boolean | null = null;
  /** Threads where Slack refused a status ("channel:thread_ts"), in refusal order. */
  private readonly statusRefused = new Set<string>();
  /** The streamed answers (native streaming, or post-then-update where refused). */
  private readonly streams: SlackStreams;

  constructor(
    private readonly client: webApi.WebClient,
    private readonly log: Logger,
    /** Reads the workspace files answers send (absent: none can be sent). */
    private readonly files?: Pick<WorkspaceAttachments, 'readForUpload'>,
  ) {
    this.streams = new SlackStreams({
      call: (method, args) => this.call(method, args),
      post: (item) => this.post(item),
      edit: (channel, ts, markdown) => this.edit(channel, ts, markdown),
      log,
    });
  }

  /** The outbox deliver function. */
  readonly deliver: Deliver = async (item) => {
    switch (item.operation) {
      case 'post':
        return { platformMessageId: await this.post(item) };
      case 'update': {
        const payload = updatePayload.parse(item.payload);
        await this.call('chat.update', { ...payload, ts: item.targetMessageId });
        return {};
      }
      case 'react':
      case 'unreact':
        await this.react(item);
        return {};
      case streamOperations.start:
        return { platformMessageId: await this.streams.start(item) };
      case streamOperations.update:
        await this.streams.update(item);
        return {};
      case streamOperations.finish:
        return { platformMessageId: await this.streams.finish(item) };
      case streamOperations.close:
        await this.streams.close(item);
        return {};
      case 'upload':
        return { platformMessageId: await this.upload(item) };
      default:
        throw new PermanentPlatformError('slack', item.operation, `unknown outbox operation "${item.operation}"`);
    }
  };

  /**
   * Sets the thread's status ("is running web_fetch…", with `loadingMessages` rotating under it;
   * '' clears it). Where Slack refuses, that thread is not asked again; other threads are.
   */
  async setThreadStatus(channelId: string, threadTs: string, status: string, loadingMessages: readonly string[] = []): Promise<void> {
    const thread = `${channelId}:${threadTs}`;
    if (this.statusRefused.has(thread)) return;
    try {
      await this.client.apiCall('assistant.threads.setStatus', {
        channel_id: channelId, thread_ts: threadTs, status, ...(loadingMessages.length > 0 ? { loading_messages: [...loadingMessages] } : {}),
      });
    } catch (error) {
      const code = platformErrorCode(error);
      if (code === null || code === 'ratelimited') return;
      // A refusal (a thread where statuses are not allowed, a missing scope) concerns this thread.
      this.statusRefused.add(thread);
      if (this.statusRefused.size > refusedThreadsKept) this.statusRefused.delete(this.statusRefused.values().next().value ?? thread);
      this.log.info({ error: code, channelId, threadTs }, 'slack-thread-status-refused');
    }
  }

  private async post(item: OutboxDelivery): Promise<string> {
    const { markdown, ...parsed } = postPayload.parse(item.payload);
    const payload = { ...parsed, metadata: withIdempotencyKey(parsed.metadata, item.idempotencyKey) };
    // An earlier attempt may have reached Slack before its sender died (or lost the answer).
    if (item.attempt > 1) {
      const found = await this.findPosted(payload.channel, payload.thread_ts, item.idempotencyKey);
      if (found !== null) {
        this.log.info({ key: item.idempotencyKey, ts: found, attempt: item.attempt }, 'slack-post-already-sent');
        return found;
      }
    }
    if (markdown === undefined) return this.call('chat.postMessage', payload);
    if (this.markdownAccepted !== false) {
      try {
        const ts = await this.call('chat.postMessage', { ...payload, markdown_text: markdown });
        this.markdownAccepted = true;
        return ts;
      } catch (error) {
        const code = error instanceof PlatformError ? error.message : '';
        if (this.markdownAccepted === true || !markdownRefusals.has(code)) throw error;
        this.markdownAccepted = false;
        this.log.info({ error: code }, 'slack-markdown-text-refused: posting mrkdwn from now on');
      }
    }
    return this.call('chat.postMessage', { ...payload, text: markdownToMrkdwn(markdown), mrkdwn: true });
  }

  /**
   * A workspace file sent with an answer (attach_file); when it can no longer be sent (deleted,
   * grown past FILE_MAX_MB), the thread is told instead.
   */
  private async upload(item: OutboxDelivery): Promise<string> {
    const payload = uploadPayload.parse(item.payload);
    let file: { name: string; bytes: Buffer };
    try {
      if (!this.files) throw new ToolError('this service stores no files');
      file = await this.files.readForUpload(payload.sessionId, payload.path);
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      return this.post({ ...item, payload: { channel: payload.channel, thread_ts: payload.thread_ts, markdown: `📎 I could not attach \`${payload.path}\`: ${error.message}.` } });
    }
    return uploadToThread(this.client, { channel: payload.channel, threadTs: payload.thread_ts }, file.name, file.bytes);
  }

  /** Replaces a message's text with Markdown, or mrkdwn where the workspace refuses Markdown. */
  private async edit(channel: string, ts: string, markdown: string): Promise<void> {
    if (this.markdownAccepted !== false) {
      try {
        await this.call('chat.update', { channel, ts, markdown_text: markdown });
        return;
      } catch (error) {
        const code = error instanceof PlatformError ? error.message : '';
        if (this.markdownAccepted === true || !markdownRefusals.has(code)) throw error;
        this.markdownAccepted = false;
        this.log.info({ error: code }, 'slack-markdown-text-refused: posting mrkdwn from now on');
      }
    }
    await this.call('chat.update', { channel, ts, text: markdownToMrkdwn(markdown) });
  }

  /**
   * The ts of a message in the thread (or, for top-level posts, among the channel's latest ones)
   * whose metadata names the key; null when there is none. A failed look-up is not a reason to
   * stop delivering: it posts (at least once) unless Slack asked to slow down.
   */
  private async findPosted(channel: string, threadTs: string | undefined, key: string): Promise<string | null> {
    const method = threadTs === undefined ? 'conversations.history' : 'conversations.replies';
    try {
      if (threadTs === undefined) {
        const page = historyPage.parse(await this.client.apiCall(method, { channel, limit: historyLookupSize, include_all_metadata: true }));
        return matchingTs(page, key);
      }
      let cursor: string | undefined;
      for (let pageNumber = 0; pageNumber < lookupPages; pageNumber += 1) {
        const page = historyPage.parse(await this.client.apiCall(method, {
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

  private async react(item: OutboxDelivery): Promise<void> {
    const payload = reactionPayload.parse(item.payload);
    const adding = item.operation === 'react';
    try {
      await this.call(adding ? 'reactions.add' : 'reactions.remove', payload);
    } catch (error) {
      const code = error instanceof PlatformError ? error.message : '';
      // Already in the wanted state: the reaction's purpose is met.
      if ((adding && code === 'already_reacted') || (!adding && code === 'no_reaction')) return;
      throw error;
    }
  }

  /** Calls a Web API method; returns the message ts when there is one. Throws PlatformError. */
  private async call(method: string, args: Record<string, unknown>): Promise<string> {
    try {
      const result = await this.client.apiCall(method, args);
      return messageResult.parse(result).ts ?? '';
    } catch (error) {
      throw toPlatformError(method, error);
    }
  }
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
