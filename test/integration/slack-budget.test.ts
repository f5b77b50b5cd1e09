// Spend in chat (issue #16), through the real Bolt receiver and the fake Slack Web API: a note at
// 80% of a session's budget, a stop with a note at 100% (no further model call), a person raising
// it with `@hippo budget`, and the spend in `@hippo status`. Spend is summed from model_calls rows
// in Postgres. A channel's daily spend cap is the operator's (CHANNEL_DAILY_BUDGET_USD,
// docs/security.md): the person who started a session raises that session's cap with `@hippo
// budget`, never the channel's, so a channel at its cap stays stopped until the day renews.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textOf } from '../fakes/fake-slack-api.js';
import type { AgentSettings } from '../../src/core/agent-context.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

// $1,000 per million tokens: 400 prompt + 5 completion tokens cost $0.405 a call.
const prices = { input: 1_000, cachedInput: 100, output: 1_000 };

/**
 * A Slack rig with these spend settings for one describe block, whose worker answers "Answer N."
 * for $0.405 a call; `calls` counts the worker's calls.
 */
function useBudgetRig(signingSecret: string, channel: string, budget: Partial<AgentSettings>) {
  let rig: SlackRig | undefined;
  let calls = 0;
  beforeAll(async () => {
    rig = await startSlackRig({ signingSecret, channel, users: [{ id: 'UADA', displayName: 'Ada' }], settings: { contextWindow: 1_000_000, prices, ...budget } });
    rig.harness.model.respond((body) => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      calls += 1;
      return { content: `Answer ${calls}.`, usage: { promptTokens: 400, cachedTokens: 0, completionTokens: 5 } };
    });
  });
  afterAll(async () => {
    await rig?.close();
  });
  const ready = (): SlackRig => {
    if (!rig) throw new Error('the budget rig is not ready (use it inside tests)');
    return rig;
  };
  return {
    get rig() {
      return ready();
    },
    get slack() {
      return ready().slack;
    },
    get calls() {
      return calls;
    },
    /** The answers and notes posted in a thread that start with `prefix`. */
    posted: (root: string, prefix: string) => ready().slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root && textOf(call).startsWith(prefix)),
  };
}

describe('spend caps in Slack', () => {
  const bed = useBudgetRig('budget-secret', 'C0BUDGET', { sessionBudgetUsd: 1 });

  it('warns at 80%, stops at the cap without calling the model again, and goes on when a person raises it', async () => {
    const { rig, slack, posted } = bed;
    const root = await rig.mention('first task');
    await until(() => posted(root, 'Answer 1.').length === 1, 10_000, 'answer 1');
    await rig.reply('second', root);
    await until(() => posted(root, 'Answer 2.').length === 1, 10_000, 'answer 2');
    // $0.81 of $1.00.
    const warning = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Heads-up'));
    expect(textOf(warning)).toBe('💸 Heads-up: this session budget is 81% used ($0.81 of $1.00).');
    await rig.reply('third', root);
    await until(() => posted(root, 'Answer 3.').length === 1, 10_000, 'answer 3');
    const reached = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Budget reached'));
    expect(textOf(reached)).toBe('💸 Budget reached: this session budget is used up ($1.22 of $1.00), so I stopped here. Nothing is lost: `@hippo budget 5` raises it.');

    // Over the cap: a new message waits; the model is not called.
    await rig.reply('fourth', root);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(bed.calls).toBe(3);
    expect(await rig.database.prisma.steerMessage.count({ where: { text: 'fourth', status: 'queued' } })).toBe(1);

    await rig.reply(`<@${slack.botUserId}> budget 2`, root);
    const raised = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Ada allowed'));
    expect(textOf(raised)).toBe('💸 Ada allowed $2.00 more (its budget is now $3.21); continuing.');
    await until(() => posted(root, 'Answer 4.').length === 1, 10_000, 'answer 4 after the raise');
    // Each note once, and core told each once (not at every look while over the cap).
    const budgetEvents = rig.harness.events.filter((event) => event.type === 'budget').map((event) => (event as { level: string }).level);
    expect(budgetEvents).toEqual(['warning', 'reached']);
    expect(posted(root, '💸 Heads-up')).toHaveLength(1);
    expect(posted(root, '💸 Budget reached')).toHaveLength(1);

    await rig.reply(`<@${slack.botUserId}> status`, root);
    const status = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).includes('Spend:'));
    expect(textOf(status)).toContain('**Spend:** $1.62 (worker $1.62 · summarizer $0 · decider $0) · budget $3.21');
  });
});

describe("the channel's daily cap", () => {
  const channel = 'C0CHANNELCAP';
  const bed = useBudgetRig('channel-budget-secret', channel, { channelDailyBudgetUsd: 0.5 });

  it("is the operator's: a starter's `budget 999999` raises the session's cap only, and the channel stays stopped", async () => {
    const { rig, slack, posted } = bed;
    const root = await rig.mention('first task');
    await until(() => posted(root, 'Answer 1.').length === 1, 10_000, 'answer 1');
    await rig.reply('second', root);
    await until(() => posted(root, 'Answer 2.').length === 1, 10_000, 'answer 2');
    await rig.reply('third', root);
    const reached = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Budget reached'));
    expect(textOf(reached)).toBe("💸 Budget reached: this channel's daily budget is used up ($0.81 of $0.50), so I stopped here. Nothing is lost: it renews at 00:00 UTC (only the operator changes it); reply after that and I continue.");
    expect(bed.calls).toBe(2);

    await rig.reply(`<@${slack.botUserId}> budget 999999`, root);
    const raised = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('💸 Ada allowed'));
    expect(textOf(raised)).toBe("💸 Ada allowed $999999.00 more for this session (its budget is now $999999.81), but this channel's daily budget is used up ($0.81 of $0.50), and only the operator changes it: reply after it renews at 00:00 UTC and I continue.");
    // The channel ran on before: the raise grew today's channel cap too. Now nothing is called.
    await rig.reply('fourth', root);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(bed.calls).toBe(2);
    expect(await rig.database.prisma.steerMessage.count({ where: { text: { in: ['third', 'fourth'] }, status: 'queued' } })).toBe(2);
    const session = await rig.database.prisma.session.findFirst({ where: { channelId: channel } });
    expect(session?.budgetUsd).toBeCloseTo(999_999 + 0.81, 2);
  });
});
