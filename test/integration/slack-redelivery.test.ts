// Slack posts are idempotent across retries: a sender that died (or lost the answer) after its post
// reached Slack leaves the item to be retried, and the retry finds the post by the idempotency key
// in its message metadata instead of posting it a second time.
// Not on test/support/slack-rig.ts: these tests drive SlackDelivery (and an outbox sender) by hand,
// with a client that never retries; the rig's agent and adapter would only run beside them.
import { webApi } from '@slack/bolt';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OutboxDelivery } from '../../src/adapters/chat/outbox-sender.js';
import { Outbox } from '../../src/adapters/chat/outbox.js';
import { OutboxStore } from '../../src/adapters/storage/outbox-store.js';
import { boltLogger } from '../../src/adapters/slack/bolt-logger.js';
import { SingleWorkspace } from '../../src/adapters/slack/workspaces/workspaces.js';
import { SlackDelivery } from '../../src/adapters/slack/deliver.js';
import { createLogger } from '../../src/log.js';
import { startFakeSlackApi, type FakeSlackApi, markdownOf } from '../fakes/fake-slack-api.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait.js';

const log = createLogger('silent');
const channel = 'C0REDELIVER';
let slack: FakeSlackApi;
let database: TestDatabase;
let delivery: SlackDelivery;
let counter = 0;

function item(key: string, payload: Record<string, unknown>, attempt: number): OutboxDelivery {
  counter += 1;
  return { id: BigInt(counter), idempotencyKey: key, sessionId: null, operation: 'post', payload: { channel, ...payload }, targetKey: null, targetMessageId: null, attempt };
}

/** A thread root ts of its own per test, so the threads never mix. */
function newThread(): string {
  counter += 1;
  return `1700000000.${String(counter).padStart(6, '0')}`;
}

beforeAll(async () => {
  slack = await startFakeSlackApi();
  database = await createTestDatabase();
});

beforeEach(() => {
  // No client-side retries: every failure goes back to the outbox, as after a crash.
  const client = new webApi.WebClient('xoxb-test-token', { slackApiUrl: slack.apiUrl, logger: boltLogger(log), retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  const identity = { teamId: slack.teamId, botUserId: slack.botUserId, botId: slack.botId };
  delivery = new SlackDelivery(new SingleWorkspace({ client, identity }), async () => null, log);
});

afterAll(async () => {
  await slack.close();
  await database.drop();
});

describe('SlackDelivery retried posts', () => {
  it('puts the idempotency key into the metadata of every post, keeping a post\'s own metadata', async () => {
    const thread = newThread();
    await delivery.deliver(item('plain:1', { thread_ts: thread, markdown: 'hello' }, 1));
    await delivery.deliver(item('note:1', { thread_ts: thread, text: 'a note', metadata: { event_type: 'hippo_memory_updated', event_payload: { memoryRunId: 'm1' } } }, 1));
    expect(slack.threadMessages(channel, thread).map((message) => message.metadata)).toEqual([
      { event_type: 'hippo_outbox', event_payload: { idempotency_key: 'plain:1' } },
      { event_type: 'hippo_memory_updated', event_payload: { memoryRunId: 'm1', idempotency_key: 'note:1' } },
    ]);
  });

  it('returns the earlier message instead of posting again when a retried post already reached Slack', async () => {
    const thread = newThread();
    const first = await delivery.deliver(item('answer:s1:4:1', { thread_ts: thread, markdown: 'The answer.' }, 1));
    const posts = slack.callsTo('chat.postMessage').length;
    const retried = await delivery.deliver(item('answer:s1:4:1', { thread_ts: thread, markdown: 'The answer.' }, 2));
    expect(retried.platformMessageId).toBe(first.platformMessageId);
    expect(slack.callsTo('chat.postMessage')).toHaveLength(posts);
    expect(slack.threadMessages(channel, thread)).toHaveLength(1);
    const lookup = slack.callsTo('conversations.replies').at(-1);
    expect(lookup?.args).toMatchObject({ channel, ts: thread, include_all_metadata: 'true' });
  });

  it('posts a retried item that is not in the thread, and does not look on a first attempt', async () => {
    const thread = newThread();
    await delivery.deliver(item('other:1', { thread_ts: thread, markdown: 'Another post.' }, 1));
    const lookups = slack.callsTo('conversations.replies').length;
    await delivery.deliver(item('fresh:1', { thread_ts: thread, markdown: 'Never sent before.' }, 1));
    expect(slack.callsTo('conversations.replies')).toHaveLength(lookups);
    await delivery.deliver(item('fresh:2', { thread_ts: thread, markdown: 'Failed before it reached Slack.' }, 3));
    expect(slack.callsTo('conversations.replies')).toHaveLength(lookups + 1);
    expect(slack.threadMessages(channel, thread).map((message) => markdownOf(message))).toEqual(['Another post.', 'Never sent before.', 'Failed before it reached Slack.']);
  });

  it('finds a retried post past the first page of a long thread', async () => {
    const thread = newThread();
    for (let n = 0; n < 230; n += 1) await delivery.deliver(item(`long:${thread}:${n}`, { thread_ts: thread, text: `message ${n}` }, 1));
    const target = slack.threadMessages(channel, thread)[220];
    const retried = await delivery.deliver(item(`long:${thread}:220`, { thread_ts: thread, text: 'message 220' }, 2));
    expect(retried.platformMessageId).toBe(target?.ts);
    expect(slack.threadMessages(channel, thread)).toHaveLength(230);
  });

  it('looks among the channel\'s latest messages for a top-level post', async () => {
    const topChannel = `C0TOP${counter}`;
    const first = await delivery.deliver({ ...item('top:1', {}, 1), payload: { channel: topChannel, text: 'top level' } });
    const retried = await delivery.deliver({ ...item('top:1', {}, 2), payload: { channel: topChannel, text: 'top level' } });
    expect(retried.platformMessageId).toBe(first.platformMessageId);
    expect(slack.messages.filter((message) => message.channel === topChannel)).toHaveLength(1);
    expect(slack.callsTo('conversations.history').at(-1)?.args).toMatchObject({ channel: topChannel, include_all_metadata: 'true' });
  });

  it('posts anyway when the look-up is refused (at least once beats never)', async () => {
    const thread = newThread();
    slack.script('conversations.replies', { error: 'missing_scope' });
    await delivery.deliver(item('refused-lookup:1', { thread_ts: thread, markdown: 'Still delivered.' }, 2));
    expect(slack.threadMessages(channel, thread).map((message) => markdownOf(message))).toEqual(['Still delivered.']);
  });
});

describe('Slack outbox redelivery', () => {
  it('sends once when the sender died after the post reached Slack but before marking it sent', async () => {
    const thread = newThread();
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const key = `answer:${thread}:7:1`;
    await outbox.enqueue({ idempotencyKey: key, sessionId: null, platform: 'slack-crash', operation: 'post', payload: { channel, thread_ts: thread, markdown: 'Posted before the crash.' } });
    // The doomed sender: claims the item (attempt 1), posts, and dies before recording it.
    const claimed = await database.prisma.outboxItem.update({ where: { idempotencyKey: key }, data: { status: 'sending', attempts: 1 } });
    const posted = await delivery.deliver({ ...item(key, {}, 1), id: claimed.id, payload: claimed.payload });
    await database.prisma.outboxItem.update({ where: { idempotencyKey: key }, data: { nextAttemptAt: new Date(Date.now() - 1_000) } });

    const sender = outbox.startSender('slack-crash', delivery.deliver, { pollMs: 20 });
    const sent = await waitFor(async () => {
      const row = await database.prisma.outboxItem.findUniqueOrThrow({ where: { idempotencyKey: key } });
      return row.status === 'sent' ? row : undefined;
    });
    await sender.stop();
    expect(sent).toMatchObject({ attempts: 2, platformMessageId: posted.platformMessageId });
    expect(slack.threadMessages(channel, thread).map((message) => markdownOf(message))).toEqual(['Posted before the crash.']);
  });

  it('sends once when Slack posted the message but the answer never came back', async () => {
    const thread = newThread();
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const key = `answer:${thread}:9:1`;
    slack.script('chat.postMessage', { dropResponse: true });
    await outbox.enqueue({ idempotencyKey: key, sessionId: null, platform: 'slack-lost', operation: 'post', payload: { channel, thread_ts: thread, markdown: 'Answer lost on the way back.' } });
    const sender = outbox.startSender('slack-lost', delivery.deliver, { pollMs: 20, baseBackoffMs: 50 });
    const sent = await waitFor(async () => {
      const row = await database.prisma.outboxItem.findUniqueOrThrow({ where: { idempotencyKey: key } });
      return row.status === 'sent' ? row : undefined;
    });
    await sender.stop();
    const messages = slack.threadMessages(channel, thread);
    expect(messages.map((message) => markdownOf(message))).toEqual(['Answer lost on the way back.']);
    expect(sent).toMatchObject({ attempts: 2, platformMessageId: messages[0]?.ts });
  });
});
