// Sends outbox items to the Slack Web API with the token of the item's workspace (its payload's
// `team`, else its session's), and turns Slack's errors into the outbox's terms: rate limits carry
// Retry-After, refusals that cannot change are permanent, an uninstalled workspace is permanent.
// Also learns, once per workspace, whether it allows `markdown_text` and an answer's feedback blocks,
// and per thread whether it shows a thread status. Streamed answers are SlackStreams' (stream-delivery.ts). Posts carry their
// idempotency key in message metadata, so a retried post that already reached Slack (its sender
// died before recording it) is found in the thread instead of being posted twice.
import { webApi } from '@slack/bolt';
import { z } from 'zod';
import { PlatformError, ToolError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { PermanentPlatformError, type Deliver, type OutboxDelivery } from '../chat/outbox-sender.js';
import { answerBlocks } from './feedback-buttons.js';
import { uploadFile } from './files.js';
import type { Json } from './message-views.js';
import { platformErrorCode, toPlatformError } from './errors.js';
import { slackMarkdown } from './slack-text.js';
import { SlackStreams, streamOperations, type SlackStreamHost } from './stream-delivery.js';
import type { SlackWorkspaces } from './workspaces/workspaces.js';
import type { ChatDelivery } from '../chat/chat-adapter.js';

const postPayload = z.looseObject({
  channel: z.string(),
  thread_ts: z.string().optional(),
  /** Markdown text: sent as markdown_text, or converted to mrkdwn where Slack refuses that. */
  markdown: z.string().optional(),
  /** The answer's last message: its Markdown goes in a `markdown` block followed by the feedback buttons. */
  feedback: z.boolean().optional(),
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
/** Most characters of an answer in its notification text. */
const notificationChars = 600;
/** Top-level posts: the channel's latest messages checked. */
const historyLookupSize = 50;

/** Threads whose status refusal is remembered, at most (the oldest is forgotten first). */
const refusedThreadsKept = 10_000;
/** Errors from a `markdown_text` post that mean "not here": post mrkdwn instead from now on. */
const markdownRefusals = new Set(['invalid_arguments', 'markdown_text_not_supported', 'invalid_markdown', 'unknown_method', 'not_allowed']);
/** Errors from an answer posted as blocks that mean "not here": its text goes as `markdown_text` there from now on. */
const blockRefusals = new Set([...markdownRefusals, 'invalid_blocks']);

/** How a post or edit carries its Markdown: as `markdown_text`, as mrkdwn `text`, or as blocks with `text` for notifications. */
type MarkdownFields = { markdown_text: string } | { text: string } | { text: string; blocks: Json[] };

/** An item's payload names its workspace in this field (removed before the call). */
export const teamField = 'team';

/** The client of one delivery and the workspace it belongs to ('' with one fixed token). */
interface Target {
  client: webApi.WebClient;
  team: string;
}

/** The Slack side of the outbox plus the one-time capability detection. */
export class SlackDelivery implements ChatDelivery {
  /** Per workspace; absent until the first markdown post tells. */
  private readonly markdownAccepted = new Map<string, boolean>();
  /** Workspaces that refused an answer's `markdown` and feedback blocks: 👍 / 👎 reactions remain there. */
  private readonly feedbackRefused = new Set<string>();
  /** Threads where Slack refused a status ("team:channel:thread_ts"), in refusal order. */
  private readonly statusRefused = new Set<string>();
  /** The streamed answers (native streaming, or post-then-update where refused). */
  private readonly streams = new SlackStreams();

  constructor(
    private readonly workspaces: SlackWorkspaces,
    /** The workspace of a session (items enqueued before payloads named their team). */
    private readonly teamOfSession: (sessionId: string) => Promise<string | null>,
    private readonly log: Logger,
    /** Reads the workspace files answers send (absent: none can be sent). */
    private readonly files?: Pick<WorkspaceAttachments, 'readForUpload'>,
    /** LINK_PREVIEWS=on: Slack may unfurl links in posts (default: never). */
    private readonly linkPreviews = false,
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
      case streamOperations.start:
        return { platformMessageId: await this.streams.start(item, this.streamHost(target)) };
      case streamOperations.update:
        await this.streams.update(item, this.streamHost(target));
        return {};
      case streamOperations.finish:
        return { platformMessageId: await this.streams.finish(item, this.streamHost(target)) };
      case streamOperations.close:
        await this.streams.close(item, this.streamHost(target));
        return {};
      case streamOperations.tasksStart: {
        const ts = await this.streams.startTasks(item, this.streamHost(target));
        return ts === undefined ? {} : { platformMessageId: ts };
      }
      case streamOperations.tasksAnswer:
        return { platformMessageId: await this.streams.answerTasks(item, this.streamHost(target)) };
      case streamOperations.tasksUpdate:
      case streamOperations.tasksStop:
        await this.streams.updateTasks(item, this.streamHost(target), item.operation === streamOperations.tasksStop);
        return {};
      case 'upload':
        return { platformMessageId: await this.upload(target, item) };
      default:
        throw new PermanentPlatformError('slack', item.operation, `unknown outbox operation "${item.operation}"`);
    }
  };

  /**
   * Sets the thread's status ("is running web_fetch…", with `loadingMessages` rotating under it;
   * '' clears it). Where Slack refuses, that thread is not asked again; other threads are.
   */
  async setThreadStatus(teamId: string, channelId: string, threadTs: string, status: string, loadingMessages: readonly string[] = []): Promise<void> {
    const thread = `${teamId}:${channelId}:${threadTs}`;
    if (this.statusRefused.has(thread)) return;
    const workspace = await this.workspaces.get(teamId);
    if (!workspace) return;
    try {
      await workspace.client.apiCall('assistant.threads.setStatus', {
        channel_id: channelId, thread_ts: threadTs, status, ...(loadingMessages.length > 0 ? { loading_messages: [...loadingMessages] } : {}),
      });
    } catch (error) {
      const code = platformErrorCode(error);
      if (code === null || code === 'ratelimited') return;
      // A refusal (a thread where statuses are not allowed, a missing scope) concerns this thread.
      this.statusRefused.add(thread);
      if (this.statusRefused.size > refusedThreadsKept) this.statusRefused.delete(this.statusRefused.values().next().value ?? thread);
      this.log.info({ teamId, error: code, channelId, threadTs }, 'slack-thread-status-refused');
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
    const { markdown, feedback, ...parsed } = postPayload.parse(item.payload);
    // Slack fetches a link it unfurls: a URL the model wrote could carry what it read to that host.
    const unfurl = this.linkPreviews ? {} : { unfurl_links: false, unfurl_media: false };
    const payload = { ...parsed, ...unfurl, metadata: withIdempotencyKey(parsed.metadata, item.idempotencyKey) };
    // An earlier attempt may have reached Slack before its sender died (or lost the answer).
    if (item.attempt > 1) {
      const found = await this.findPosted(target, payload.channel, payload.thread_ts, item.idempotencyKey);
      if (found !== null) {
        this.log.info({ key: item.idempotencyKey, ts: found, attempt: item.attempt }, 'slack-post-already-sent');
        return found;
      }
    }
    if (markdown === undefined) return this.call(target, 'chat.postMessage', payload);
    return this.withMarkdown(target, markdown, feedback === true, (fields) => this.call(target, 'chat.postMessage', { ...payload, ...fields, ...('text' in fields ? { mrkdwn: true } : {}) }));
  }

  /**
   * Sends Markdown as `markdown_text`, or converted to mrkdwn `text` where the workspace refuses
   * Markdown (learned at the first refusal, then asked no more); either way as text only: Slack's
   * own `<…>` syntax is escaped (slack-text.ts, markdown-to-mrkdwn.ts). An answer's last message
   * (`feedback`) goes as a `markdown` block and the feedback buttons, its text for notifications
   * and screen readers; where the workspace refuses those blocks, as the others (learned likewise).
   */
  private async withMarkdown(target: Target, markdown: string, feedback: boolean, send: (fields: MarkdownFields) => Promise<string>): Promise<string> {
    const accepted = this.markdownAccepted.get(target.team);
    if (feedback && accepted !== false && !this.feedbackRefused.has(target.team)) {
      try {
        const ts = await send({ text: markdownToMrkdwn(notificationPreview(markdown)), blocks: answerBlocks(markdown) });
        this.markdownAccepted.set(target.team, true);
        return ts;
      } catch (error) {
        const code = error instanceof PlatformError ? error.message : '';
        if (!blockRefusals.has(code)) throw error;
        this.feedbackRefused.add(target.team);
        this.log.warn({ teamId: target.team, error: code }, 'slack-feedback-blocks-refused: answers go without buttons (reactions count) from now on');
      }
    }
    if (accepted !== false) {
      try {
        const ts = await send({ markdown_text: slackMarkdown(markdown) });
        this.markdownAccepted.set(target.team, true);
        return ts;
      } catch (error) {
        const code = error instanceof PlatformError ? error.message : '';
        if (accepted === true || !markdownRefusals.has(code)) throw error;
        this.markdownAccepted.set(target.team, false);
        this.log.info({ teamId: target.team, error: code }, 'slack-markdown-text-refused: posting mrkdwn from now on');
      }
    }
    return send({ text: markdownToMrkdwn(markdown) });
  }

  /** What a stream needs of this delivery, bound to the item's workspace. */
  private streamHost(target: Target): SlackStreamHost {
    return {
      call: (method, args) => this.call(target, method, args),
      post: (item) => this.post(target, item),
      edit: async (channel, ts, markdown, feedback = false) => void (await this.withMarkdown(target, markdown, feedback, (fields) => this.call(target, 'chat.update', { channel, ts, ...fields }))),
      metadata: (key) => withIdempotencyKey(undefined, key),
      log: this.log,
    };
  }

  /**
   * A workspace file sent with an answer (attach_file); when it can no longer be sent (deleted,
   * grown past FILE_MAX_MB), the thread is told instead.
   */
  private async upload(target: Target, item: OutboxDelivery): Promise<string> {
    const payload = uploadPayload.parse(item.payload);
    let file: { name: string; bytes: Buffer };
    try {
      if (!this.files) throw new ToolError('this service stores no files');
      file = await this.files.readForUpload(payload.sessionId, payload.path);
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      return this.post(target, { ...item, payload: { channel: payload.channel, thread_ts: payload.thread_ts, markdown: `📎 I could not attach \`${payload.path}\`: ${error.message}.` } });
    }
    return uploadFile(target.client, { channel: payload.channel, threadTs: payload.thread_ts }, file.name, file.bytes);
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

/**
 * The start of an answer for its notification (the `text` beside its blocks): short, so that
 * even escaped (each character up to five) it stays far below what Slack takes in an edit.
 */
function notificationPreview(markdown: string): string {
  if (markdown.length <= notificationChars) return markdown;
  // Not between the two halves of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(markdown.charAt(notificationChars - 1)) ? notificationChars - 1 : notificationChars;
  return `${markdown.slice(0, end)}…`;
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
