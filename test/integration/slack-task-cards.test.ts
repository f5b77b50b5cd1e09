// A run's tool calls and TODO.md plan as Slack task cards (issue 26): one native stream per run
// carries `task_update` chunks (in progress, then complete) and the plan (`plan_update`), laid out
// as SLACK_TASK_DISPLAY says, what the model says between calls, and the answer at its end with the
// feedback buttons: the status card and one message. Where Slack refuses streaming the status card
// alone shows the run, and the answer is posted. Model text arrives as text (no ping, no disguised link).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackApi } from '../fakes/fake-slack-api.js';
import { feedbackBlocksOf, markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'task-cards-secret';
const channel = 'C0TASKS';
const todo = '# Ship the release\n- [x] read the notes\n- [ ] tag the build';
const answer = 'Released <!here>, see [https://slack.com/help](https://evil.example/x?d=1).';
const shownAnswer = 'Released &lt;!here&gt;, see [https://slack.com/help](https://evil.example/x?d=1) (evil.example).';
let rig: SlackRig;
let slack: FakeSlackApi;
const feedback: string[] = [];

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, slack: { threadStatusError: null }, users: [{ id: 'UADA', displayName: 'Ada' }], env: { SLACK_TASK_DISPLAY: 'plan' }, onFeedback: (platform, kind) => feedback.push(`${platform}:${kind}`) });
  slack = rig.slack;
});
afterAll(async () => {
  await rig?.close();
});

/** The worker searches, writes its TODO.md, reads a document that does not exist, then answers: one step per model call. */
function scriptRun(): void {
  rig.harness.model.respond((body): FakeReply => {
    if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
    const usage = { promptTokens: 100, cachedTokens: 0, completionTokens: 3 };
    const step = body.messages.filter((message) => message['role'] === 'tool').length;
    if (step === 0) return { content: 'Looking.', toolCalls: [{ name: 'memory_search', arguments: { query: 'release notes <!channel>' } }], usage };
    if (step === 1) return { toolCalls: [{ name: 'todo_write', arguments: { content: todo } }], usage };
    if (step === 2) return { content: 'Now <@U0EVE>.', toolCalls: [{ name: 'memory_read', arguments: { path: 'MISSING.md' } }], usage };
    return { content: answer, usage };
  });
}

async function mention(inChannel: string, root: string): Promise<void> {
  const event = { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ship it`, ts: root, channel: inChannel, event_ts: root };
  const response = await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${root}`, event }), 'application/json');
  expect(response.status).toBe(200);
}

type Chunk = Record<string, unknown>;
const chunksOf = (call: { args: Record<string, unknown> }): Chunk[] => (call.args['chunks'] as Chunk[] | undefined) ?? [];

describe('Slack task cards', () => {
  it('streams the tool calls as task cards, TODO.md as the plan, what the model says and the answer, in order, in one message', async () => {
    scriptRun();
    const root = '1740000001.000100';
    await mention(channel, root);
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const ts = String(started.response?.['ts']);
    expect(started.args).toMatchObject({ channel, task_display_mode: 'plan', recipient_user_id: 'UADA', recipient_team_id: slack.teamId });
    const stop = await slack.waitForCall('chat.stopStream', (call) => call.args['ts'] === ts);
    const later = slack.calls.filter((call) => (call.method === 'chat.appendStream' || call.method === 'chat.stopStream') && call.args['ts'] === ts);
    const shown = [started, ...later].flatMap(chunksOf).map((chunk) => (chunk['type'] === 'markdown_text' ? ['text', chunk['text']] : chunk['type'] === 'plan_update' ? ['plan', chunk['title']] : [String(chunk['id']).startsWith('plan-') ? chunk['id'] : 'call', chunk['title'], chunk['status']]));
    expect(shown).toEqual([
      ['text', 'Looking.\n\n'],
      ['call', 'memory_search: release notes &lt;!channel&gt;', 'in_progress'],
      ['call', 'memory_search: release notes &lt;!channel&gt;', 'complete'],
      ['plan', 'Ship the release'],
      ['plan-1', 'read the notes', 'complete'],
      ['plan-2', 'tag the build', 'pending'],
      ['text', '\n\nNow &lt;@U0EVE&gt;.\n\n'],
      ['call', 'memory_read: MISSING.md', 'in_progress'],
      ['call', 'memory_read: MISSING.md', 'error'],
      ['text', shownAnswer],
    ]);
    // The answer ends the stream with the feedback buttons; nothing else carries it, and no text
    // Slack reads as a mention or a link of its own reaches it.
    expect(stop.args['blocks']).toEqual([expect.objectContaining({ type: 'context_actions' })]);
    await until(() => slack.callsTo('chat.update').some((call) => JSON.stringify(call.args['blocks'] ?? '').includes('Done')), 10_000, 'the card done');
    expect(slack.threadMessages(channel, root).map((message) => (message.ts === ts ? 'stream' : markdownOf(message) ?? 'card'))).toEqual(['card', 'stream']);
    const streamed = slack.threadMessages(channel, root).find((message) => message.ts === ts);
    expect(markdownOf(streamed)).toBe(`Looking.\n\n\n\nNow &lt;@U0EVE&gt;.\n\n${shownAnswer}`);
    expect(JSON.stringify(slack.calls.filter((call) => call.args['channel'] === channel && call.args['thread_ts'] === root || call.args['ts'] === ts))).not.toMatch(/<[!@#]|<https?:/);
    const unfurls = (post: { args: Record<string, unknown> }) => [String(post.args['unfurl_links']), String(post.args['unfurl_media'])];
    for (const post of slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root)) expect(unfurls(post)).toEqual(['false', 'false']);
    // A call's cards share its id (Slack updates the card in place), and its end carries a short
    // output: the tool's own words, without the element the model reads them in.
    const calls = [started, ...later].flatMap(chunksOf).filter((chunk) => chunk['type'] === 'task_update' && !String(chunk['id']).startsWith('plan-'));
    expect(new Set(calls.map((chunk) => chunk['id'])).size).toBe(2);
    expect(String(calls[1]?.['output'] ?? '').length).toBeGreaterThan(0);
    expect(String(calls[1]?.['output'] ?? '').length).toBeLessThanOrEqual(200);
    expect(String(calls[3]?.['output'])).toMatch(/^Error: .*no memory document MISSING\.md/);
    expect(JSON.stringify(calls)).not.toContain('tool-output');
    // The answer's stop is the stream's last word (the run's own stop after it changes nothing); one stream for the run.
    expect(later.find((call) => call.method === 'chat.stopStream')).toBe(stop);
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root && call.args['task_display_mode'] !== undefined)).toHaveLength(1);
  });

  it('falls back to the status card alone where Slack refuses streaming: nothing else is posted', async () => {
    const other = 'C0NOTASKS';
    slack.script('chat.startStream', { error: 'not_allowed' });
    scriptRun();
    const root = '1740000002.000100';
    await mention(other, root);
    const posted = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && markdownOf(call.args) === shownAnswer);
    // Posted, the answer still ends with the feedback buttons (after a markdown block holding its text).
    expect(feedbackBlocksOf(posted.args)).toBe(1);
    // No unfurl: Slack does not fetch the link the model wrote (LINK_PREVIEWS is off).
    expect([posted.args['unfurl_links'], posted.args['unfurl_media']].map(String)).toEqual(['false', 'false']);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await until(async () => (await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 10_000, 'the outbox drained');
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['channel'] === other)).toHaveLength(1);
    expect(slack.calls.filter((call) => (call.method === 'chat.appendStream' || call.method === 'chat.stopStream') && call.args['channel'] === other)).toHaveLength(0);
    // The thread holds the status card and the answer, nothing more; no task item failed.
    expect(slack.threadMessages(other, root).map((message) => markdownOf(message) ?? 'card')).toEqual(['card', shownAnswer]);
    expect(await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: 'failed' } })).toBe(0);
  });

  it('ends a streamed answer with feedback buttons; a click is recorded once as answer feedback', async () => {
    const answer = Array.from({ length: 30 }, (_unused, index) => `Line ${index + 1} of the answer.`).join(' ');
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, chunkDelayMs: 60, usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 90 } }));
    const root = '1740000003.000100';
    await mention(channel, root);
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const ts = String(started.response?.['ts']);
    const stop = await slack.waitForCall('chat.stopStream', (call) => call.args['ts'] === ts, 20_000);
    expect(stop.args['blocks']).toEqual([expect.objectContaining({ type: 'context_actions', elements: [expect.objectContaining({ type: 'feedback_buttons', action_id: 'hippo_feedback' })] })]);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await until(async () => (await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 10_000, 'the outbox drained');
    const click = async (value: string) => {
      const payload = {
        type: 'block_actions', team: { id: slack.teamId }, user: { id: 'UADA', team_id: slack.teamId }, trigger_id: 't1',
        container: { type: 'message', message_ts: ts, channel_id: channel }, channel: { id: channel }, message: { type: 'message', ts, thread_ts: root, text: '' },
        actions: [{ type: 'feedback_buttons', action_id: 'hippo_feedback', block_id: 'b', value, action_ts: '1' }],
      };
      expect((await rig.post(new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), 'application/x-www-form-urlencoded')).status).toBe(200);
    };
    await click('up');
    await until(() => feedback.length === 1, 10_000, 'the click recorded');
    await click('up');
    await click('sideways');
    await click('down');
    await until(() => feedback.length === 2, 10_000, 'the second kind recorded');
    expect(feedback).toEqual(['slack:up', 'slack:down']);
    expect(await rig.database.prisma.answerFeedback.count({ where: { messageId: ts } })).toBe(2);
  });
});
