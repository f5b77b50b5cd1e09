// A run's tool calls and TODO.md plan as Slack task cards (issue 26): one native stream per run
// carries `task_update` chunks (in progress, then complete) and the plan (`plan_update`), laid out
// as SLACK_TASK_DISPLAY says; where Slack refuses streaming the status card alone shows the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackApi } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'task-cards-secret';
const channel = 'C0TASKS';
const todo = '# Ship the release\n- [x] read the notes\n- [ ] tag the build';
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
    if (step === 0) return { toolCalls: [{ name: 'memory_search', arguments: { query: 'release notes' } }], usage };
    if (step === 1) return { toolCalls: [{ name: 'todo_write', arguments: { content: todo } }], usage };
    if (step === 2) return { toolCalls: [{ name: 'memory_read', arguments: { path: 'MISSING.md' } }], usage };
    return { content: 'Released.', usage };
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
  it('streams each tool call as a task card and TODO.md as the plan, in order, in one stream stopped at the run end', async () => {
    scriptRun();
    const root = '1740000001.000100';
    await mention(channel, root);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && call.args['markdown_text'] === 'Released.');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const ts = String(started.response?.['ts']);
    expect(started.args).toMatchObject({ channel, task_display_mode: 'plan', recipient_user_id: 'UADA', recipient_team_id: slack.teamId });
    await slack.waitForCall('chat.stopStream', (call) => call.args['ts'] === ts);
    const later = slack.calls.filter((call) => (call.method === 'chat.appendStream' || call.method === 'chat.stopStream') && call.args['ts'] === ts);
    const shown = [started, ...later].flatMap(chunksOf).map((chunk) => (chunk['type'] === 'plan_update' ? ['plan', chunk['title']] : [chunk['id'] === undefined ? '' : String(chunk['id']).startsWith('plan-') ? chunk['id'] : 'call', chunk['title'], chunk['status']]));
    expect(shown).toEqual([
      ['call', 'memory_search: release notes', 'in_progress'],
      ['call', 'memory_search: release notes', 'complete'],
      ['plan', 'Ship the release'],
      ['plan-1', 'read the notes', 'complete'],
      ['plan-2', 'tag the build', 'pending'],
      ['call', 'memory_read: MISSING.md', 'in_progress'],
      ['call', 'memory_read: MISSING.md', 'error'],
    ]);
    // A call's cards share its id (Slack updates the card in place), and its end carries a short output.
    const calls = [started, ...later].flatMap(chunksOf).filter((chunk) => chunk['type'] === 'task_update' && !String(chunk['id']).startsWith('plan-'));
    expect(new Set(calls.map((chunk) => chunk['id'])).size).toBe(2);
    expect(String(calls[1]?.['output'] ?? '').length).toBeGreaterThan(0);
    expect(String(calls[1]?.['output'] ?? '').length).toBeLessThanOrEqual(200);
    expect(String(calls[3]?.['output'])).toContain('no memory document MISSING.md');
    // The stop is the last call on the task stream; one task stream for the run.
    expect(later.at(-1)?.method).toBe('chat.stopStream');
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root && call.args['task_display_mode'] !== undefined)).toHaveLength(1);
  });

  it('falls back to the status card alone where Slack refuses streaming: nothing else is posted', async () => {
    const other = 'C0NOTASKS';
    slack.script('chat.startStream', { error: 'not_allowed' });
    scriptRun();
    const root = '1740000002.000100';
    await mention(other, root);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && call.args['markdown_text'] === 'Released.');
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await until(async () => (await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 10_000, 'the outbox drained');
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['channel'] === other)).toHaveLength(1);
    expect(slack.calls.filter((call) => (call.method === 'chat.appendStream' || call.method === 'chat.stopStream') && call.args['channel'] === other)).toHaveLength(0);
    // The thread holds the status card and the answer, nothing more; no task item failed.
    expect(slack.threadMessages(other, root).map((message) => message.blocks === undefined ? message.markdown_text : 'card')).toEqual(['card', 'Released.']);
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
