// Slack's AI-app conventions: the assistant pane's greeting and suggested prompts, thread titles
// from the request, and 👍 / 👎 on answers recorded as feedback (hippo_answer_feedback_total).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistantGreeting, suggestedPrompts } from '../../src/adapters/slack/assistant-pane.js';
import { Metrics } from '../../src/metrics.js';
import { textOf, type FakeSlackApi } from '../fakes/fake-slack-api.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'assistant-secret';
const channel = 'C0ANSWERS';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let metrics: Metrics;
let counter = 0;

const send = (event: Record<string, unknown>, eventId = `EvS${++counter}`, headers: Record<string, string> = {}) =>
  rig.sendEvent(event, { eventId, headers, envelope: { api_app_id: 'A1' } });

function threadStarted(user: string, dm: string, threadTs: string): Record<string, unknown> {
  return {
    type: 'assistant_thread_started', event_ts: threadTs,
    assistant_thread: { user_id: user, context: { channel_id: channel, team_id: slack.teamId, enterprise_id: null }, channel_id: dm, thread_ts: threadTs },
  };
}

function reaction(user: string, name: string, ts: string, itemUser = slack.botUserId): Record<string, unknown> {
  return { type: 'reaction_added', user, reaction: name, item_user: itemUser, item: { type: 'message', channel, ts }, event_ts: rig.nextTs() };
}

const feedbackRows = () => database.prisma.answerFeedback.findMany({ orderBy: { id: 'asc' } });

beforeAll(async () => {
  let listener: (platform: string, kind: 'up' | 'down') => void = () => undefined;
  rig = await startSlackRig({
    signingSecret,
    users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }],
    env: { ALLOWED_USERS: 'UADA' },
    onFeedback: (platform, kind) => listener(platform, kind),
  });
  ({ database, slack, harness } = rig);
  metrics = new Metrics({ events: harness.deps.events });
  listener = metrics.answerFeedback;
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack assistant pane', () => {
  it('greets a new assistant thread once and offers suggested prompts', async () => {
    const threadTs = rig.nextTs();
    await send(threadStarted('UADA', 'D0ADA', threadTs), 'EvGreet');
    await send(threadStarted('UADA', 'D0ADA', threadTs), 'EvGreet', { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
    const prompts = await slack.waitForCall('assistant.threads.setSuggestedPrompts', (call) => call.args['thread_ts'] === threadTs);
    expect(prompts.args).toMatchObject({ channel_id: 'D0ADA', thread_ts: threadTs, prompts: suggestedPrompts });
    const greeting = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === threadTs);
    expect(textOf(greeting)).toBe(assistantGreeting);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === threadTs)).toHaveLength(1);
  });

  it('tells someone who may not use Hippo so, instead of greeting them, and offers no prompts', async () => {
    const threadTs = rig.nextTs();
    await send(threadStarted('UBOB', 'D0BOB', threadTs));
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === threadTs);
    expect(textOf(answer)).toContain('ALLOWED_USERS');
    expect(slack.callsTo('assistant.threads.setSuggestedPrompts').some((call) => call.args['thread_ts'] === threadTs)).toBe(false);
  });

  it('titles an assistant thread after the request that starts its session', async () => {
    harness.model.respond(() => ({ content: 'Here you go.' }));
    const threadTs = rig.nextTs();
    const ts = rig.nextTs();
    await send({ type: 'message', channel_type: 'im', user: 'UADA', text: 'Compare our two pricing pages\nand list the gaps', ts, thread_ts: threadTs, channel: 'D0ADA', event_ts: ts });
    const title = await slack.waitForCall('assistant.threads.setTitle', (call) => call.args['thread_ts'] === threadTs);
    expect(title.args).toMatchObject({ channel_id: 'D0ADA', title: 'Compare our two pricing pages' });
    expect(await database.prisma.session.count({ where: { threadKey: threadTs, channelId: 'D0ADA', startedBy: 'UADA' } })).toBe(1);
  });
});

describe('Slack answer feedback', () => {
  it('records 👍 and 👎 on answers once per person, and ignores other messages, emoji and strangers', async () => {
    harness.model.respond(() => ({ content: 'The answer is 42.' }));
    const root = rig.nextTs();
    await send({ type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> what is the answer?`, ts: root, channel, event_ts: root });
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'The answer is 42.');
    const answerTs = String(answer.response?.['ts']);
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await until(async () => (await database.prisma.outboxItem.count({ where: { platformMessageId: answerTs, status: 'sent' } })) === 1);
    const card = slack.callsTo('chat.postMessage').find((call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_'));

    await send(reaction('UADA', '+1', answerTs));
    await send(reaction('UADA', '+1', answerTs)); // the same reaction again (a second event)
    await send(reaction('UADA', '-1::skin-tone-2', answerTs));
    await send(reaction('UADA', 'tada', answerTs));
    await send(reaction('UADA', 'thumbsup', String(card?.response?.['ts']))); // the status card is no answer
    await send(reaction('UADA', '+1', root, 'UADA')); // a person's message
    await send(reaction('UBOB', '+1', answerTs)); // not allowed to use Hippo
    const rows = await feedbackRows();
    expect(rows.map((row) => ({ kind: row.kind, userId: row.userId, messageId: row.messageId, sessionId: row.sessionId, platform: row.platform, workspaceId: row.workspaceId }))).toEqual([
      { kind: 'up', userId: 'UADA', messageId: answerTs, sessionId: session.id, platform: 'slack', workspaceId: slack.teamId },
      { kind: 'down', userId: 'UADA', messageId: answerTs, sessionId: session.id, platform: 'slack', workspaceId: slack.teamId },
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/hippo_answer_feedback_total\{platform="slack",kind="up"\} 1/);
    expect(text).toMatch(/hippo_answer_feedback_total\{platform="slack",kind="down"\} 1/);
  });
});
