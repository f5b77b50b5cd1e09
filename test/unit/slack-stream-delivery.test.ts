// SlackStreams (adapters/slack/stream-delivery.ts) against a scripted Web API: appends only while
// it knows what the message shows, replaces otherwise, falls back to post-then-update where Slack
// refuses streams, and posts the answer when the streamed message can no longer change.
import { webApi } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import type { OutboxDelivery } from '../../src/adapters/chat/outbox-sender.js';
import { toPlatformError } from '../../src/adapters/slack/errors.js';
import { SlackStreams, type SlackStreamHost } from '../../src/adapters/slack/stream-delivery.js';
import { PlatformError } from '../../src/core/errors.js';
import { createLogger } from '../../src/log.js';

/** A Slack refusal as the Web API client raises it (`ok: false`). */
function refusal(method: string, code: string): PlatformError {
  const error = Object.assign(new Error(`An API error occurred: ${code}`), { code: webApi.ErrorCode.PlatformError, data: { ok: false, error: code } });
  return toPlatformError(method, error);
}

function host(script: Record<string, Array<Error | undefined>> = {}) {
  const calls: Array<[string, Record<string, unknown>]> = [];
  let posts = 0;
  const fake: SlackStreamHost = {
    call: async (method, args) => {
      calls.push([method, args]);
      const next = script[method]?.shift();
      if (next) throw next;
      return method === 'chat.startStream' ? '100.1' : '';
    },
    post: async (item) => {
      posts += 1;
      calls.push(['post', item.payload as Record<string, unknown>]);
      return `200.${posts}`;
    },
    edit: async (channel, ts, markdown) => {
      calls.push(['edit', { channel, ts, markdown }]);
      const next = script['edit']?.shift();
      if (next) throw next;
    },
    metadata: (key) => ({ event_type: 'hippo_outbox', event_payload: { idempotency_key: key } }),
    log: createLogger('silent'),
  };
  // The operations as SlackDelivery calls them, with the host of the item's workspace.
  const delivery = new SlackStreams();
  const streams = {
    start: (entry: OutboxDelivery) => delivery.start(entry, fake),
    update: (entry: OutboxDelivery) => delivery.update(entry, fake),
    finish: (entry: OutboxDelivery) => delivery.finish(entry, fake),
    close: (entry: OutboxDelivery) => delivery.close(entry, fake),
  };
  return { streams, calls };
}

const item = (operation: string, payload: { [key: string]: string }, extra: Partial<OutboxDelivery> = {}): OutboxDelivery => ({
  id: 1n, idempotencyKey: `k-${operation}`, sessionId: 's', operation, payload, targetKey: null, targetMessageId: null, attempt: 1, ...extra,
});
const start = (channel = 'C1') => item('stream', { channel, thread_ts: '1.0', markdown: 'Hello', recipient_user_id: 'U1', recipient_team_id: 'T1' });
const update = (markdown: string) => item('stream-update', { channel: 'C1', markdown }, { targetKey: 'k-stream', targetMessageId: '100.1' });

describe('SlackStreams', () => {
  it('appends what is new, and after a failed append replaces the text instead of appending twice', async () => {
    const { streams, calls } = host({ 'chat.appendStream': [undefined, new PlatformError('slack', 'chat.appendStream', 'socket hang up')] });
    expect(await streams.start(start())).toBe('100.1');
    await streams.update(update('Hello world'));
    await expect(streams.update(update('Hello world, again'))).rejects.toThrow('socket hang up');
    await streams.update(update('Hello world, again')); // the outbox's retry
    expect(calls.map(([method, args]) => [method, args['markdown_text'] ?? args['markdown'] ?? null])).toEqual([
      ['chat.startStream', 'Hello'],
      ['chat.appendStream', ' world'],
      ['chat.appendStream', ', again'],
      ['chat.stopStream', null],
      ['edit', 'Hello world, again'],
    ]);
  });

  it('streams Slack-safe text: what it appends continues what it sent, escaped and with real hosts', async () => {
    const { streams, calls } = host();
    await streams.start(item('stream', { channel: 'C1', thread_ts: '1.0', markdown: 'Hi <!here> [https://slack.com', recipient_user_id: 'U1', recipient_team_id: 'T1' }));
    await streams.update(update('Hi <!here> [https://slack.com](https://evil.example) & <@U1>'));
    await streams.finish(item('finish', { channel: 'C1', markdown: 'Hi <!here> [https://slack.com](https://evil.example) & <@U1> done' }, { targetKey: 'k-stream', targetMessageId: '100.1' }));
    const sent = calls.filter(([method]) => method.startsWith('chat.')).map(([, args]) => String(args['markdown_text'] ?? ''));
    expect(sent).toEqual(['Hi &lt;!here&gt; [https://slack.com', '](https://evil.example) (evil.example) &amp; &lt;@U1&gt;', ' done']);
    expect(sent.join('')).toBe('Hi &lt;!here&gt; [https://slack.com](https://evil.example) (evil.example) &amp; &lt;@U1&gt; done');
  });

  it('posts and edits in a channel where Slack refused a stream, without asking again', async () => {
    const { streams, calls } = host({ 'chat.startStream': [refusal('chat.startStream', 'not_allowed')] });
    expect(await streams.start(start('C9'))).toBe('200.1');
    expect(await streams.start(start('C9'))).toBe('200.2');
    expect(calls.filter(([method]) => method === 'chat.startStream')).toHaveLength(1);
    // A rate limit is not a refusal: it is retried by the outbox.
    const limited = host({ 'chat.startStream': [new PlatformError('slack', 'chat.startStream', 'ratelimited', 1_000)] });
    await expect(limited.streams.start(start())).rejects.toThrow('ratelimited');
  });

  it('stops the stream with the rest of the answer, or posts the answer when the message cannot change', async () => {
    const { streams, calls } = host();
    await streams.start(start());
    const finish = item('finish', { channel: 'C1', thread_ts: '1.0', markdown: 'Hello there.' }, { targetKey: 'k-stream', targetMessageId: '100.1' });
    expect(await streams.finish(finish)).toBe('100.1');
    expect(calls.at(-1)).toEqual(['chat.stopStream', { channel: 'C1', ts: '100.1', markdown_text: ' there.' }]);
    // Another process's stream (unknown here) that Slack no longer lets anyone edit.
    const other = host({ edit: [refusal('chat.update', 'cant_update_message')] });
    expect(await other.streams.finish(finish)).toBe('200.1');
    expect(other.calls.map(([method]) => method)).toEqual(['chat.stopStream', 'edit', 'post']);
    // No stream at all: the answer is posted.
    const none = host();
    expect(await none.streams.finish({ ...finish, targetMessageId: null })).toBe('200.1');
  });
});
