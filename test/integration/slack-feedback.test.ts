// Feedback buttons on every Slack answer (issue 40): whichever way an answer reaches the thread (a
// short post, a stream and the parts after it, a tool run's task stream, a post edited where Slack
// refuses streams) its last message ends with exactly one `context_actions` block of feedback
// buttons, its earlier messages with none, and a click on them is recorded as answer feedback.
// Where the workspace refuses those blocks, the answer goes without them (👍 / 👎 reactions count).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/adapters/chat/split-message.js';
import { slackMessageLimit } from '../../src/adapters/slack/inbound.js';
import { feedbackBlocksOf, markdownOf, type FakeSlackApi, type FakeSlackMessage } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'feedback-secret';
const channel = 'C0FEEDBACK';
const usage = { promptTokens: 100, cachedTokens: 0, completionTokens: 30 };
let rig: SlackRig;
let slack: FakeSlackApi;
const feedback: string[] = [];
let counter = 0;

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, slack: { threadStatusError: null }, users: [{ id: 'UADA', displayName: 'Ada' }], onFeedback: (platform, kind) => feedback.push(`${platform}:${kind}`) });
  slack = rig.slack;
});
let first: SlackRig | undefined;
beforeAll(() => {
  first = rig;
});
afterAll(async () => {
  await first?.close();
});

function nextTs(): string {
  counter += 1;
  return `1750000${String(counter).padStart(3, '0')}.000400`;
}

/** A long answer in paragraphs: `paragraphs` × ~190 characters. */
function longAnswer(paragraphs: number): string {
  return Array.from({ length: paragraphs }, (_unused, index) => `Paragraph ${index + 1}: ${'the answer & its <details> form word by word. '.repeat(4).trim()}`).join('\n\n');
}

/** Ada mentions Hippo in a new thread of `inChannel`; waits until the run's outbox items are all sent. */
async function ask(inChannel: string): Promise<string> {
  const root = nextTs();
  const event = { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> tell me`, ts: root, channel: inChannel, event_ts: root };
  expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${root}`, event }), 'application/json')).status).toBe(200);
  await until(async () => {
    const session = await rig.database.prisma.session.findFirst({ where: { threadKey: root } });
    if (!session) return false;
    const answers = await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, idempotencyKey: { startsWith: 'answer:' }, status: 'sent' } });
    const open = await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } });
    return answers > 0 && open === 0 && !slack.threadMessages(inChannel, root).some((message) => message.streaming);
  }, 30_000, 'the answer delivered');
  const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
  expect(await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: 'failed' } })).toBe(0);
  return root;
}

/** The thread's messages that show Markdown (the status card aside), in order. */
const shown = (inChannel: string, root: string): FakeSlackMessage[] => slack.threadMessages(inChannel, root).filter((message) => markdownOf(message) !== undefined);

/** Ada clicks 👍 or 👎 under a message; resolves when Hippo answered the interaction. */
async function click(inChannel: string, root: string, ts: string, value: string): Promise<void> {
  const payload = {
    type: 'block_actions', team: { id: slack.teamId }, user: { id: 'UADA', team_id: slack.teamId }, trigger_id: 't1',
    container: { type: 'message', message_ts: ts, channel_id: inChannel }, channel: { id: inChannel }, message: { type: 'message', ts, thread_ts: root, text: '' },
    actions: [{ type: 'feedback_buttons', action_id: 'hippo_feedback', block_id: 'b', value, action_ts: '1' }],
  };
  expect((await rig.post(new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), 'application/x-www-form-urlencoded')).status).toBe(200);
}

/** Exactly one feedback block, on the answer's last message; a click on it is recorded once. */
async function expectFeedbackOnLast(inChannel: string, root: string): Promise<FakeSlackMessage> {
  const messages = shown(inChannel, root);
  expect(messages.map(feedbackBlocksOf)).toEqual([...messages.slice(1).map(() => 0), 1]);
  const last = messages.at(-1)!;
  // Nothing but the card and the answer's messages carries buttons.
  expect(slack.threadMessages(inChannel, root).reduce((sum, message) => sum + feedbackBlocksOf(message), 0)).toBe(1);
  const before = feedback.length;
  await click(inChannel, root, last.ts, 'up');
  await until(() => feedback.length === before + 1, 10_000, 'the click recorded');
  expect(feedback.at(-1)).toBe('slack:up');
  expect(await rig.database.prisma.answerFeedback.count({ where: { messageId: last.ts, kind: 'up' } })).toBe(1);
  return last;
}

describe('Slack feedback buttons on every answer', () => {
  it('a short answer without a stream: a markdown block, then the buttons, its text for notifications', async () => {
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: 'Short & **sweet** <!here>.', usage }));
    const root = await ask(channel);
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root)).toHaveLength(0);
    const last = await expectFeedbackOnLast(channel, root);
    expect(shown(channel, root)).toHaveLength(1);
    // Slack's syntax stays text in the block and in the fallback (no ping), and Markdown stays Markdown.
    expect(last.blocks).toEqual([{ type: 'markdown', text: 'Short &amp; **sweet** &lt;!here&gt;.' }, expect.objectContaining({ type: 'context_actions' })]);
    expect(last.text).toBe('Short &amp; *sweet* &lt;!here&gt;.');
    expect(last.markdown_text).toBeUndefined();
  });

  it('a long streamed answer: the stream shows the first part, the last part carries the buttons', async () => {
    const answer = longAnswer(22);
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, chunkDelayMs: 5, usage }));
    const root = await ask(channel);
    const parts = splitMessage(answer, { limit: slackMessageLimit });
    expect(parts).toHaveLength(2);
    const streamTs = String((await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root)).response?.['ts']);
    expect(shown(channel, root).map((message) => message.ts)[0]).toBe(streamTs);
    expect(shown(channel, root)).toHaveLength(2);
    await expectFeedbackOnLast(channel, root);
  });

  it('a tool run: its task stream ends with the answer and the buttons', async () => {
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      return body.messages.at(-1)?.['role'] === 'tool' ? { content: 'Listed them all.', usage } : { toolCalls: [{ name: 'memory_list', arguments: {} }], usage };
    });
    const root = await ask(channel);
    const last = await expectFeedbackOnLast(channel, root);
    expect(last.chunks?.some((chunk) => (chunk as { type?: string }).type === 'task_update')).toBe(true);
    expect(shown(channel, root)).toHaveLength(1);
  });

  it('a tool run with a long answer: the task stream holds its first part, the last part carries the buttons', async () => {
    const answer = longAnswer(22);
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      return body.messages.at(-1)?.['role'] === 'tool' ? { content: answer, usage } : { toolCalls: [{ name: 'memory_list', arguments: {} }], usage };
    });
    const root = await ask(channel);
    expect(shown(channel, root)).toHaveLength(2);
    expect(shown(channel, root)[0]?.chunks?.some((chunk) => (chunk as { type?: string }).type === 'task_update')).toBe(true);
    await expectFeedbackOnLast(channel, root);
  });

  it("a tool run's answer dense in what Slack escapes: parts that fit 12,000 characters once escaped, the last with the buttons", async () => {
    const answer = '&'.repeat(2_990);
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      return body.messages.at(-1)?.['role'] === 'tool' ? { content: answer, usage } : { toolCalls: [{ name: 'memory_list', arguments: {} }], usage };
    });
    const root = await ask(channel);
    const messages = shown(channel, root);
    expect(messages.length).toBeGreaterThan(1);
    expect(messages.map((message) => (markdownOf(message) ?? '').replace(/\n\(\d\/\d\)$/, '')).join('')).toBe('&amp;'.repeat(2_990));
    await expectFeedbackOnLast(channel, root);
  });

  it('a streamed answer dense in what Slack escapes: parts that fit, no call over 12,000 characters, nothing fails', async () => {
    const answer = '&'.repeat(2_990);
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, usage }));
    const root = await ask(channel);
    const messages = shown(channel, root);
    expect(messages.map((message) => (markdownOf(message) ?? '').replace(/\n\(\d\/\d\)$/, '')).join('')).toBe('&amp;'.repeat(2_990));
    const streamed = slack.calls.filter((call) => /^chat\.(start|append|stop)Stream$|^chat\.update$/.test(call.method) && (call.args['thread_ts'] === root || messages.some((message) => message.ts === call.args['ts'])));
    expect(streamed.every((call) => String(call.args['markdown_text'] ?? '').length <= 12_000)).toBe(true);
    await expectFeedbackOnLast(channel, root);
  });

  it('a channel that refuses streams: the post edited into the answer ends with the buttons', async () => {
    const other = 'C0FBNOSTREAM';
    slack.script('chat.startStream', { error: 'not_allowed' });
    const answer = longAnswer(6);
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, chunkDelayMs: 10, usage }));
    const root = await ask(other);
    const last = await expectFeedbackOnLast(other, root);
    expect(shown(other, root)).toHaveLength(1);
    expect(markdownOf(last)).toBe(answer.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;'));
    // The post was made while the answer formed, then edited: the edit brought the buttons.
    const edit = slack.callsTo('chat.update').filter((call) => call.args['ts'] === last.ts && feedbackBlocksOf(call.args) === 1);
    expect(edit).toHaveLength(1);
    // Its notification text is the answer's start, short however long the answer.
    expect(String(edit[0]?.args['text'])).toBe(`${answer.slice(0, 600).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')}…`);
    expect(slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root && feedbackBlocksOf(call.args) > 0)).toHaveLength(0);
  });
});

describe('Slack answers where the workspace refuses the feedback blocks', () => {
  it('go as markdown_text without buttons from then on (reactions count there), after one refused try', async () => {
    // Slack of a workspace that does not know context_actions blocks.
    const old = await startSlackRig({ signingSecret, slack: { threadStatusError: null, unknownBlockTypes: ['context_actions'] }, users: [{ id: 'UADA', displayName: 'Ada' }] });
    try {
      [rig, slack] = [old, old.slack];
      rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: 'Plain **words**.', usage }));
      const root = await ask(channel);
      expect(shown(channel, root).map((message) => [markdownOf(message), feedbackBlocksOf(message)])).toEqual([['Plain **words**.', 0]]);
      const next = await ask(channel);
      expect(shown(channel, next).map((message) => [markdownOf(message), feedbackBlocksOf(message)])).toEqual([['Plain **words**.', 0]]);
      const tries = slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root || call.args['thread_ts'] === next);
      expect(tries.filter((call) => markdownOf(call.args) === 'Plain **words**.').map((call) => feedbackBlocksOf(call.args))).toEqual([1, 0, 0]);
    } finally {
      await old.close();
    }
  });
});
