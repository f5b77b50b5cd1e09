// The streamed answer on Slack (docs/product.md "Watch"): Slack's native text streaming
// (chat.startStream / appendStream / stopStream), or, where Slack refuses it, a post that is
// edited (chat.update). Native streams only append, and an append repeated after a failure would
// show text twice, so this process appends only while it knows exactly what the message shows
// (it made the last change that is known to have landed); otherwise it stops the stream and
// replaces the text. The final answer replaces the stream message, whatever happened before
// (a crash, another replica's edits): delivered exactly once, never as a second message.
import { z } from 'zod';
import { PlatformError } from '../../core/errors.js';
import type { Logger } from '../../log.js';
import { PermanentPlatformError, type OutboxDelivery } from '../chat/outbox-sender.js';
import type { Json } from './message-views.js';
import { feedbackBlock } from './feedback-buttons.js';
import { platformErrorCode } from './errors.js';
import { slackMarkdown } from './slack-text.js';

/** Outbox operations of a streamed answer. */
export const streamOperations = {
  /** The stream message: payload { channel, thread_ts, markdown, recipient_user_id?, recipient_team_id? }. */
  start: 'stream',
  /** Its text so far (full text, not a delta): payload { channel, markdown }; target = the start. */
  update: 'stream-update',
  /** The answer's first part replacing the stream (posted when there is none): payload { channel, thread_ts, markdown, feedback? }. */
  finish: 'finish',
  /** A stream that ended without an answer shows its last text: payload { channel, markdown }. */
  close: 'stream-close',
  /** A run's task cards (tool calls as `task_update` chunks): payload { channel, thread_ts, chunks, task_display_mode, recipient_* }. */
  tasksStart: 'tasks',
  /** More chunks for the run's task stream: payload { channel, chunks }; target = the tasks start. */
  tasksUpdate: 'tasks-update',
  /** The run ended: its task stream is stopped. payload { channel }; target = the tasks start. */
  tasksStop: 'tasks-stop',
  /**
   * The answer of a run that called tools, as the end of its task stream (tasks and answer in one
   * message): payload { channel, thread_ts, markdown, feedback? }; target = the tasks start.
   */
  tasksAnswer: 'tasks-answer',
} as const;

/** Operations whose target may have no message (a task stream Slack refused: the status card shows the run instead). */
export const optionalTargetStreamOperations: readonly string[] = [
  streamOperations.finish, streamOperations.close, streamOperations.tasksUpdate, streamOperations.tasksStop, streamOperations.tasksAnswer,
];

const startPayload = z.looseObject({
  channel: z.string(), thread_ts: z.string(), markdown: z.string(),
  recipient_user_id: z.string().optional(), recipient_team_id: z.string().optional(),
});
const textPayload = z.looseObject({ channel: z.string(), markdown: z.string() });
/** An answer's part; `feedback`: it ends the answer, so its message ends with the feedback buttons. */
const finishPayload = textPayload.extend({ feedback: z.boolean().optional() });
const chunk = z.looseObject({ type: z.string() });
const tasksStartPayload = z.looseObject({
  channel: z.string(), thread_ts: z.string(), chunks: z.array(chunk), task_display_mode: z.enum(['timeline', 'plan']),
  recipient_user_id: z.string().optional(), recipient_team_id: z.string().optional(),
});
const tasksPayload = z.looseObject({ channel: z.string(), chunks: z.array(chunk).optional() });
const tasksAnswerPayload = z.looseObject({ channel: z.string(), thread_ts: z.string(), markdown: z.string(), feedback: z.boolean().optional() });

/** Messages whose state is remembered, at most (the oldest is forgotten first). */
const shownKept = 5_000;

/** Edit refusals that mean the stream message is gone or can no longer change. */
const unchangeable = new Set(['message_not_found', 'cant_update_message', 'edit_window_closed', 'msg_too_long']);

/** What a message shows, as far as this process knows: a stream still open with this text, or a finished message. */
type Shown = { mode: 'streaming'; text: string } | { mode: 'message' };

/** The parts of SlackDelivery a stream uses, bound to the item's workspace. */
export interface SlackStreamHost {
  /** Calls a Web API method; returns the message ts when there is one. Throws PlatformError. */
  call(method: string, args: Record<string, unknown>): Promise<string>;
  /** Posts payload { channel, thread_ts, markdown } with the item's key in its metadata (found again on a retry). */
  post(item: OutboxDelivery): Promise<string>;
  /** Replaces a message's text with Markdown (mrkdwn where the workspace refuses Markdown); `feedback`: with the feedback buttons after it. */
  edit(channel: string, ts: string, markdown: string, feedback?: boolean): Promise<void>;
  /** The message metadata that names an outbox key (a retried post finds the message by it). */
  metadata(key: string): Record<string, unknown>;
  log: Logger;
}

/** Delivers the stream operations; one per SlackDelivery (what it knows of messages is by channel and ts). */
export class SlackStreams {
  private readonly shown = new Map<string, Shown>();
  /** Channels where Slack refused a native stream: post-then-update there. */
  private readonly refusedChannels = new Set<string>();

  /** The stream message: a native stream where Slack allows it, else a post. Returns its ts. */
  async start(item: OutboxDelivery, host: SlackStreamHost): Promise<string> {
    const payload = startPayload.parse(item.payload);
    const { channel } = payload;
    // Outside a DM Slack needs to know whom the stream is for; without that, a post is the honest way.
    const canStream = !this.refusedChannels.has(channel) && (payload.recipient_user_id !== undefined || channel.startsWith('D'));
    // A retry may follow a native start that Slack answered and the sender never recorded: such a
    // stream cannot be found again (no metadata), so a retry posts, and the post finds itself.
    if (canStream && item.attempt === 1) {
      try {
        const ts = await host.call('chat.startStream', {
          channel, thread_ts: payload.thread_ts, markdown_text: slackMarkdown(payload.markdown),
          ...(payload.recipient_user_id ? { recipient_user_id: payload.recipient_user_id, recipient_team_id: payload.recipient_team_id } : {}),
        });
        this.remember(channel, ts, { mode: 'streaming', text: payload.markdown });
        return ts;
      } catch (error) {
        const code = slackRefusal(error);
        if (code === null) throw error;
        this.refusedChannels.add(channel);
        host.log.info({ channel, error: code }, 'slack-stream-refused: posting and editing instead');
      }
    }
    const ts = await host.post({ ...item, payload: { channel, thread_ts: payload.thread_ts, markdown: payload.markdown } });
    this.remember(channel, ts, { mode: 'message' });
    return ts;
  }

  /** Shows the text so far: appended to a stream this process knows, else the text replaced. */
  async update(item: OutboxDelivery, host: SlackStreamHost): Promise<void> {
    const { channel, markdown } = textPayload.parse(item.payload);
    const ts = requireTarget(item);
    if (await this.append(host, channel, ts, markdown)) return;
    await this.replace(host, channel, ts, markdown);
  }

  /**
   * The answer's first part: the stream message becomes it (the stream is stopped with the rest
   * of the text, or stopped and edited); without a stream message, or when it can no longer be
   * changed, the part is posted. The answer's last part ends with the feedback buttons whichever
   * way it goes. Returns the ts of the message that shows it.
   */
  async finish(item: OutboxDelivery, host: SlackStreamHost): Promise<string> {
    const { channel, markdown, feedback, ...rest } = finishPayload.parse(item.payload);
    const post = { ...item, payload: { ...rest, channel, markdown, ...(feedback ? { feedback } : {}) } };
    if (!item.targetMessageId) return host.post(post);
    const ts = item.targetMessageId;
    try {
      if (!(await this.stopWith(host, channel, ts, markdown, feedback ? [feedbackBlock()] : undefined))) await this.replace(host, channel, ts, markdown, feedback === true);
      return ts;
    } catch (error) {
      const code = error instanceof PlatformError ? error.message : '';
      if (!unchangeable.has(code)) throw error;
      host.log.warn({ channel, ts, error: code }, 'slack-stream-unchangeable: posting the answer instead');
      return host.post(post);
    }
  }

  /** A stream that ended without an answer (tool calls, a failure, a Stop) shows its last text, finished. */
  async close(item: OutboxDelivery, host: SlackStreamHost): Promise<void> {
    if (!item.targetMessageId) return;
    const { channel, markdown } = textPayload.parse(item.payload);
    const ts = item.targetMessageId;
    try {
      if (!(await this.stopWith(host, channel, ts, markdown))) await this.replace(host, channel, ts, markdown);
    } catch (error) {
      const code = error instanceof PlatformError ? error.message : '';
      if (!unchangeable.has(code)) throw error;
    }
  }

  /**
   * A run's task stream: a native stream of `task_update` chunks, or nothing where Slack refuses
   * streaming (the status card shows the run there). A retry starts nothing: a stream Slack
   * opened before a crash cannot be found again, and a second one would show every card twice (R17).
   */
  async startTasks(item: OutboxDelivery, host: SlackStreamHost): Promise<string | undefined> {
    const payload = tasksStartPayload.parse(item.payload);
    const { channel } = payload;
    const canStream = !this.refusedChannels.has(channel) && (payload.recipient_user_id !== undefined || channel.startsWith('D'));
    if (!canStream || item.attempt !== 1) return undefined;
    try {
      return await host.call('chat.startStream', {
        channel, thread_ts: payload.thread_ts, task_display_mode: payload.task_display_mode, chunks: payload.chunks,
        ...(payload.recipient_user_id ? { recipient_user_id: payload.recipient_user_id, recipient_team_id: payload.recipient_team_id } : {}),
      });
    } catch (error) {
      const code = slackRefusal(error);
      if (code === null) throw error;
      this.refusedChannels.add(channel);
      host.log.info({ channel, error: code }, 'slack-stream-refused: task cards shown in the status card only');
      return undefined;
    }
  }

  /**
   * Appends task chunks (or stops the task stream). A chunk names its task by id, so sending it
   * again after a failure updates the same card: retries are safe. A stream Slack closed is left as is.
   */
  async updateTasks(item: OutboxDelivery, host: SlackStreamHost, stop: boolean): Promise<void> {
    if (!item.targetMessageId) return;
    const { channel, chunks } = tasksPayload.parse(item.payload);
    try {
      await host.call(stop ? 'chat.stopStream' : 'chat.appendStream', { channel, ts: item.targetMessageId, ...(chunks?.length ? { chunks } : {}) });
    } catch (error) {
      if (slackRefusal(error) === null) throw error;
    }
  }

  /**
   * A run's answer as the end of its task stream: the text as a `markdown_text` chunk after the
   * cards, the feedback buttons, and the item's key in the metadata, in one chat.stopStream.
   * Without a task stream (Slack refused one), when Slack closed it, or on a retry, the answer is
   * posted; the post looks for its key first, so an answer that did reach the stream is not shown twice.
   */
  async answerTasks(item: OutboxDelivery, host: SlackStreamHost): Promise<string> {
    const { channel, thread_ts: threadTs, markdown, feedback } = tasksAnswerPayload.parse(item.payload);
    const post = { ...item, payload: { channel, thread_ts: threadTs, markdown, ...(feedback ? { feedback } : {}) } };
    if (!item.targetMessageId || item.attempt !== 1) return host.post(post);
    try {
      await host.call('chat.stopStream', {
        channel, ts: item.targetMessageId, chunks: [{ type: 'markdown_text', text: slackMarkdown(markdown) }],
        ...(feedback ? { blocks: [feedbackBlock()] } : {}), metadata: host.metadata(item.idempotencyKey),
      });
      this.remember(channel, item.targetMessageId, { mode: 'message' });
      return item.targetMessageId;
    } catch (error) {
      if (slackRefusal(error) === null) throw error;
      return host.post(post);
    }
  }

  /** Appends what `markdown` adds to an open stream this process knows; false when it cannot. */
  private async append(host: SlackStreamHost, channel: string, ts: string, markdown: string): Promise<boolean> {
    const key = `${channel}:${ts}`;
    const shown = this.shown.get(key);
    const suffix = shown?.mode === 'streaming' ? addedText(shown.text, markdown) : null;
    if (suffix === null) return false;
    if (suffix === '') return true;
    // Unknown until the append is known to have landed: a retry must not append it twice.
    this.shown.delete(key);
    try {
      await host.call('chat.appendStream', { channel, ts, markdown_text: suffix });
    } catch (error) {
      if (slackRefusal(error) === null) throw error;
      return false; // closed by Slack (a stream times out) or by another replica
    }
    this.remember(channel, ts, { mode: 'streaming', text: markdown });
    return true;
  }

  /** Stops an open stream this process knows with the rest of `markdown`; false when it cannot. */
  private async stopWith(host: SlackStreamHost, channel: string, ts: string, markdown: string, blocks?: Json[]): Promise<boolean> {
    const key = `${channel}:${ts}`;
    const shown = this.shown.get(key);
    const suffix = shown?.mode === 'streaming' ? addedText(shown.text, markdown) : null;
    if (suffix === null) return false;
    this.shown.delete(key);
    try {
      await host.call('chat.stopStream', { channel, ts, ...(suffix === '' ? {} : { markdown_text: suffix }), ...(blocks ? { blocks } : {}) });
    } catch (error) {
      if (slackRefusal(error) === null) throw error;
      return false;
    }
    this.remember(channel, ts, { mode: 'message' });
    return true;
  }

  /** Makes the message show exactly `markdown` (and the feedback buttons): a stream that may be open is stopped first. */
  private async replace(host: SlackStreamHost, channel: string, ts: string, markdown: string, feedback = false): Promise<void> {
    const key = `${channel}:${ts}`;
    if (this.shown.get(key)?.mode !== 'message') {
      try {
        await host.call('chat.stopStream', { channel, ts });
      } catch (error) {
        // Not a stream (a post), or one already stopped: nothing to stop.
        if (slackRefusal(error) === null) throw error;
      }
      this.remember(channel, ts, { mode: 'message' });
    }
    await host.edit(channel, ts, markdown, feedback);
  }

  private remember(channel: string, ts: string, shown: Shown): void {
    const key = `${channel}:${ts}`;
    this.shown.delete(key);
    this.shown.set(key, shown);
    if (this.shown.size > shownKept) this.shown.delete(this.shown.keys().next().value ?? key);
  }
}

/**
 * What a stream showing `before` must append to show `after`, as Slack-safe text (slack-text.ts);
 * null when `after` does not continue `before` (the message is replaced instead).
 */
function addedText(before: string, after: string): string | null {
  if (!after.startsWith(before)) return null;
  const shown = slackMarkdown(before);
  const next = slackMarkdown(after);
  return next.startsWith(shown) ? next.slice(shown.length) : null;
}

/** Slack's error code when Slack answered `ok: false` (a refusal, not a rate limit or a network failure); else null. */
function slackRefusal(error: unknown): string | null {
  if (!(error instanceof PlatformError) || error.message === 'ratelimited') return null;
  return platformErrorCode(error.cause);
}

function requireTarget(item: OutboxDelivery): string {
  if (!item.targetMessageId) throw new PermanentPlatformError('slack', item.operation, `${item.idempotencyKey} has no target message`);
  return item.targetMessageId;
}
