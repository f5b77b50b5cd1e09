// A channel's daily spend cap is the operator's (CHANNEL_DAILY_BUDGET_USD, docs/security.md): the
// person who started a session raises that session's cap with `@hippo budget`, never the
// channel's, so a channel at its cap stays stopped until the day renews, through the real Bolt
// receiver and the fake Slack Web API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackApi, SlackCall } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'channel-budget-secret';
const channel = 'C0CHANNELCAP';
let rig: SlackRig;
let slack: FakeSlackApi;
let counter = 0;

// $1,000 per million tokens: 400 prompt + 5 completion tokens cost $0.405 a call.
const prices = { input: 1_000, cachedInput: 100, output: 1_000 };

async function say(text: string, ts: string, threadTs?: string): Promise<void> {
  const event = threadTs
    ? { type: 'message', channel_type: 'channel', user: 'UADA', text, ts, thread_ts: threadTs, channel, event_ts: ts }
    : { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts, channel, event_ts: ts };
  const body = JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event });
  expect((await rig.post(body, 'application/json')).status).toBe(200);
}

function nextTs(): string {
  counter += 1;
  return `1730000${String(counter).padStart(3, '0')}.000100`;
}

const textOf = (call: SlackCall) => String(markdownOf(call.args) ?? call.args['text'] ?? '');
const posted = (root: string, prefix: string) => slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root && textOf(call).startsWith(prefix));

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }],
    settings: { contextWindow: 1_000_000, prices, channelDailyBudgetUsd: 0.5 },
  });
  slack = rig.slack;
});

afterAll(async () => {
  await rig?.close();
});

describe("the channel's daily cap", () => {
  it("is the operator's: a starter's `budget 999999` raises the session's cap only, and the channel stays stopped", async () => {
    let calls = 0;
    rig.harness.model.respond((body) => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      calls += 1;
      return { content: `Answer ${calls}.`, usage: { promptTokens: 400, cachedTokens: 0, completionTokens: 5 } };
    });
    const root = nextTs();
    await say('first task', root);
    await until(() => posted(root, 'Answer 1.').length === 1, 10_000, 'answer 1');
    await say('second', nextTs(), root);
    await until(() => posted(root, 'Answer 2.').length === 1, 10_000, 'answer 2');
    await say('third', nextTs(), root);
    const reached = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Budget reached'));
    expect(textOf(reached)).toBe("💸 Budget reached: this channel's daily budget is used up ($0.81 of $0.50), so I stopped here. Nothing is lost: it renews at 00:00 UTC (only the operator changes it); reply after that and I continue.");
    expect(calls).toBe(2);

    await say(`<@${slack.botUserId}> budget 999999`, nextTs(), root);
    const raised = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Ada allowed'));
    expect(textOf(raised)).toBe("💸 Ada allowed $999999.00 more for this session (its budget is now $999999.81), but this channel's daily budget is used up ($0.81 of $0.50), and only the operator changes it: reply after it renews at 00:00 UTC and I continue.");
    // The channel ran on before: the raise grew today's channel cap too. Now nothing is called.
    await say('fourth', nextTs(), root);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(calls).toBe(2);
    expect(await rig.database.prisma.steerMessage.count({ where: { text: { in: ['third', 'fourth'] }, status: 'queued' } })).toBe(2);
    const session = await rig.database.prisma.session.findFirst({ where: { channelId: channel } });
    expect(session?.budgetUsd).toBeCloseTo(999_999 + 0.81, 2);
  });
});
