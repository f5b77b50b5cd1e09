// Spend in chat (issue #16), through the real Bolt receiver and the fake Slack Web API: a note at
// 80% of a session's budget, a stop with a note at 100% (no further model call), a person raising
// it with `@hippo budget`, and the spend in `@hippo status`. Spend is summed from model_calls rows
// in Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackApi, SlackCall } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'budget-secret';
const channel = 'C0BUDGET';
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
  return `1720000${String(counter).padStart(3, '0')}.000100`;
}

const textOf = (call: SlackCall) => String(markdownOf(call.args) ?? call.args['text'] ?? '');
const posted = (root: string, prefix: string) => slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root && textOf(call).startsWith(prefix));

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }],
    settings: { contextWindow: 1_000_000, prices, sessionBudgetUsd: 1 },
  });
  slack = rig.slack;
});

afterAll(async () => {
  await rig?.close();
});

describe('spend caps in Slack', () => {
  it('warns at 80%, stops at the cap without calling the model again, and goes on when a person raises it', async () => {
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
    // $0.81 of $1.00.
    const warning = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Heads-up'));
    expect(textOf(warning)).toBe('💸 Heads-up: this session budget is 81% used ($0.81 of $1.00).');
    await say('third', nextTs(), root);
    await until(() => posted(root, 'Answer 3.').length === 1, 10_000, 'answer 3');
    const reached = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Budget reached'));
    expect(textOf(reached)).toBe('💸 Budget reached: this session budget is used up ($1.22 of $1.00), so I stopped here. Nothing is lost: `@hippo budget 5` raises it.');

    // Over the cap: a new message waits; the model is not called.
    await say('fourth', nextTs(), root);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(calls).toBe(3);
    expect(await rig.database.prisma.steerMessage.count({ where: { text: 'fourth', status: 'queued' } })).toBe(1);

    await say(`<@${slack.botUserId}> budget 2`, nextTs(), root);
    const raised = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Ada allowed'));
    expect(textOf(raised)).toBe('💸 Ada allowed $2.00 more (its budget is now $3.21); continuing.');
    await until(() => posted(root, 'Answer 4.').length === 1, 10_000, 'answer 4 after the raise');
    // Each note once, and core told each once (not at every look while over the cap).
    const budgetEvents = rig.harness.events.filter((event) => event.type === 'budget').map((event) => (event as { level: string }).level);
    expect(budgetEvents).toEqual(['warning', 'reached']);
    expect(posted(root, '💸 Heads-up')).toHaveLength(1);
    expect(posted(root, '💸 Budget reached')).toHaveLength(1);

    await say(`<@${slack.botUserId}> status`, nextTs(), root);
    const status = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).includes('Spend:'));
    expect(textOf(status)).toContain('**Spend:** $1.62 (worker $1.62 · summarizer $0 · decider $0) · budget $3.21');
  });
});
