// Slack's payload kinds replayed through the real receiver (signed, over HTTP, into real Bolt):
// message subtypes, assistant and App Home events, reactions, uninstall, and interactions with
// state values. Each is handled or ignored cleanly; none gets a 5xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, type FakeSlackApi } from '../fakes/fake-slack-api.js';
import * as payloads from '../fixtures/slack-payloads.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'payloads-secret';
const channel = 'C0REPLAY';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let counter = 0;

function ids(threadTs: string, ts = rig.nextTs(), user = 'UADA'): payloads.PayloadIds {
  return { teamId: slack.teamId, channel, ts, threadTs, user, botUserId: slack.botUserId, botId: slack.botId };
}

async function event(payload: object): Promise<number> {
  const response = await rig.post(JSON.stringify(payloads.envelope(slack.teamId, `EvP${++counter}`, payload)), 'application/json');
  await response.text();
  return response.status;
}

async function interaction(payload: object): Promise<number> {
  const response = await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded');
  await response.text();
  return response.status;
}

const steerTexts = async (sessionId: string) => (await database.prisma.steerMessage.findMany({ where: { sessionId }, orderBy: { id: 'asc' } })).map((steer) => steer.text);

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }] });
  ({ database, slack, harness } = rig);
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack payloads through the receiver', () => {
  it('takes file shares and thread broadcasts as steers, applies an edit, and ignores bot posts and joins', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    harness.model.respond(async () => {
      await gate;
      return { content: 'ok' };
    });
    const root = rig.nextTs();
    expect(await event({ type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> look at the files`, ts: root, channel, event_ts: root })).toBe(200);
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await harness.model.waitFor(() => true);

    const broadcastTs = rig.nextTs();
    const statuses = [
      await event(payloads.fileShare(ids(root), 'here are my notes')),
      await event(payloads.fileShare(ids(root), '')),
      await event(payloads.threadBroadcast(ids(root, broadcastTs), 'posting this to the channel too')),
      await event(payloads.messageChanged(ids(root), broadcastTs, 'posting this to the channel too', 'posting this (edited)')),
      await event(payloads.botMessage(ids(root), 'I am another app')),
      await event(payloads.channelJoin(ids(root))),
    ];
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await steerTexts(session.id)).toEqual(['look at the files', 'here are my notes', '(shared a file)', 'posting this (edited)']);
    release();
    await harness.waitForEvent('run-end', (end) => end.session.id === session.id);
  });

  it('greets an assistant thread, ignores App Home, reactions on other messages and uninstall in single-token mode', async () => {
    const threadTs = rig.nextTs();
    expect(await event(payloads.assistantThreadStarted(ids(threadTs), 'D0ADA'))).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === threadTs);
    const before = slack.calls.length;
    expect(await event(payloads.appHomeOpened(ids(threadTs), 'D0ADA'))).toBe(200);
    expect(await event(payloads.reactionAdded(ids(threadTs), '+1', threadTs, 'UADA'))).toBe(200);
    expect(await event(payloads.reactionAdded(ids(threadTs), '+1', threadTs, slack.botUserId))).toBe(200);
    expect(await event(payloads.appUninstalled())).toBe(200);
    expect(await database.prisma.answerFeedback.count()).toBe(0);
    // Nothing was posted to the person for those (other tests' cards may still be edited meanwhile).
    expect(slack.calls.slice(before).filter((call) => call.method.startsWith('chat.') && call.args['channel'] === 'D0ADA')).toEqual([]);
  });

  it('handles Hippo\'s button with state values, and acknowledges other apps\' buttons and modal submissions without acting', async () => {
    harness.model.respond(() => ({ content: 'done' }));
    const root = rig.nextTs();
    await event({ type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> quick one`, ts: root, channel, event_ts: root });
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await harness.waitForEvent('run-end', (end) => end.session.id === session.id);
    const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_pause'));
    const cardTs = String(card.response?.['ts']);

    expect(await interaction(payloads.blockActions(ids(root), 'hippo_pause', session.id, cardTs))).toBe(200);
    await until(async () => (await database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).paused);
    const started = Date.now();
    expect(await interaction(payloads.blockActions(ids(root), 'other_app_button', 'x', cardTs))).toBe(200);
    expect(await interaction(payloads.viewSubmission(ids(root), 'someone_elses_modal'))).toBe(200);
    // Acknowledged at once, not after Bolt's 3-second wait for a listener.
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
