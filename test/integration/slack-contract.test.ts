// The shared chat-adapter contract (test/support/adapter-contract.ts), run against the Slack
// adapter: the real adapter and Bolt HTTP receiver on Hippo's HttpServer, fed signed Events API
// requests, posting to the fake Slack Web API; a real agent on Postgres.
import { afterAll, beforeAll, describe } from 'vitest';
import { slackMessageKey, slackThread } from '../../src/adapters/slack/context.js';
import type { FakeSlackApi, FakeSlackMessage } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import { lastMessageText } from '../fakes/fake-model-server.js';
import { runAdapterContract, eventually, type AdapterContractTarget, type SentMessage } from '../support/adapter-contract.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { scriptRoles } from '../support/model-script.js';

const signingSecret = 'contract-signing-secret';
const channel = 'C0CONTRACT';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let target: AdapterContractTarget;
let counter = 0;

/** The last line of a message without its quote marker. */
function lastLine(text: string): string {
  return (text.split('\n').at(-1) ?? '').replace(/^> ?/, '');
}

/** A fresh Slack ts, increasing. */
function nextTs(): string {
  counter += 1;
  return `1720000${String(counter).padStart(3, '0')}.000300`;
}

/** Posts a signed Events API request; a retry carries Slack's retry headers. Fails unless acked. */
async function postEvent(event: Record<string, unknown>, eventId: string, retry = 0): Promise<void> {
  const body = JSON.stringify({ token: 'legacy', team_id: slack.teamId, api_app_id: 'A1', type: 'event_callback', event_id: eventId, event_time: 1, event });
  const retryHeaders: Record<string, string> = retry > 0 ? { 'x-slack-retry-num': String(retry), 'x-slack-retry-reason': 'http_timeout' } : {};
  const response = await rig.post(body, 'application/json', retryHeaders);
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`the Slack receiver answered ${response.status} to ${eventId}`);
}

/** A person's message in a channel or thread, as the message.channels event. */
function message(user: string, text: string, ts: string, threadTs?: string): Record<string, unknown> {
  return { type: 'message', channel_type: 'channel', channel, user, text, ts, event_ts: ts, ...(threadTs ? { thread_ts: threadTs } : {}) };
}

/**
 * A person mentioning Hippo: Slack sends app_mention and, to apps subscribed to message.channels,
 * the same message again as a message event (each with its own event id).
 */
async function postMention(text: string, ts: string, threadTs?: string): Promise<void> {
  const words = `<@${slack.botUserId}> ${text}`;
  await postEvent({ type: 'app_mention', channel, user: 'UADA', text: words, ts, event_ts: ts, ...(threadTs ? { thread_ts: threadTs } : {}) }, `Ev${++counter}`);
  await postEvent(message('UADA', words, ts, threadTs), `Ev${++counter}`);
}

/** What a person sees of a posted message: its blocks' text where it has blocks, else its text. */
function visible(posted: FakeSlackMessage): SentMessage {
  const blocks = Array.isArray(posted.blocks) ? (posted.blocks as Array<Record<string, unknown>>) : [];
  const sections = blocks
    // A section's text object, or a markdown block's text (an answer's last message).
    .map((block) => (typeof block['text'] === 'string' ? block['text'] : (block['text'] as { text?: unknown } | undefined)?.text))
    .filter((text): text is string => typeof text === 'string')
    .map((text) => text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
  const text = sections.length > 0 ? sections.join('\n') : (markdownOf(posted) ?? posted.text ?? '');
  const buttons = blocks
    .flatMap((block) => (Array.isArray(block['elements']) ? (block['elements'] as Array<Record<string, unknown>>) : []))
    .filter((element) => element['type'] === 'button')
    .map((element) => String((element['text'] as { text?: unknown } | undefined)?.text ?? ''));
  return { text, buttons };
}

/**
 * Everything delivered so far is handled once its request is acked (the receiver answers after the
 * durable write); what follows it (agent events, rendering, commands, outbox) is settled when no
 * outbox item waits and neither the events nor the Web API calls moved for a while.
 */
async function settle(): Promise<void> {
  const quietMs = 150;
  let seen = '';
  let since = Date.now();
  await eventually(async () => {
    const pending = await database.prisma.outboxItem.count({ where: { platform: 'slack', status: { in: ['pending', 'sending'] } } });
    const now = `${harness.events.length}:${slack.calls.length}:${pending}`;
    if (now !== seen) {
      seen = now;
      since = Date.now();
      return false;
    }
    return pending === 0 && Date.now() - since >= quietMs;
  }, 'the Slack adapter to settle');
}

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }], settings: { contextWindow: 10_000 }, outbox: { pollMs: 20, baseBackoffMs: 20, maxBackoffMs: 200 } });
  ({ database, slack, harness } = rig);
  const keyOf = (ts: string) => slackMessageKey(slack.teamId, channel, ts);
  target = {
    platform: 'slack',
    limit: 3_000,
    stores: harness.stores,
    events: harness.events,
    emit: (event) => harness.deps.events.emit(event),
    answerWith: (reply) => scriptRoles(harness.model, { worker: (body) => ({ content: reply(lastLine(lastMessageText(body))) }) }),
    deliverMention: async (text) => {
      const ts = nextTs();
      await postMention(text, ts);
      const thread = slackThread(slack.teamId, channel, ts);
      await eventually(async () => (await harness.stores.sessions.find(thread)) ?? undefined, 'the session');
      return thread;
    },
    deliverReply: async (thread, text, options = {}) => {
      const ts = nextTs();
      const event = message('UBOB', text, ts, thread.threadKey);
      const eventId = `Ev${++counter}`;
      if (options.duplicate) {
        // Slack retries an event it thinks was not acked in time with the same event id; the retry
        // can race the first delivery (the steer key holds), or come after it finished (the
        // processed event id answers it; only retries read it).
        await Promise.all([postEvent(event, eventId), postEvent(event, eventId, 1)]);
        await postEvent(event, eventId, 2);
      } else {
        await postEvent(event, eventId);
      }
      return keyOf(ts);
    },
    deliverOwnMessage: async (thread, text) => {
      const ts = nextTs();
      await postEvent({ type: 'message', channel, user: slack.botUserId, bot_id: slack.botId, text, ts, thread_ts: thread.threadKey, event_ts: ts }, `Ev${++counter}`);
      return keyOf(ts);
    },
    deliverBotMessage: async (thread, text) => {
      const ts = nextTs();
      await postEvent({ type: 'message', subtype: 'bot_message', channel, bot_id: 'BOTHER', username: 'otherbot', text, ts, thread_ts: thread.threadKey, event_ts: ts }, `Ev${++counter}`);
      return keyOf(ts);
    },
    deliverCommand: async (thread, text) => {
      const ts = nextTs();
      await postMention(text, ts, thread.threadKey);
      return keyOf(ts);
    },
    sentMessages: (thread) => slack.threadMessages(thread.channelId, thread.threadKey).map(visible),
    settle,
  };
});

afterAll(async () => {
  await rig?.close();
});

describe('chat adapter contract: Slack', () => {
  runAdapterContract(() => target);
});
