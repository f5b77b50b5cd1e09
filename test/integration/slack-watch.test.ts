// Watching a run in Slack (product.md "Watch"): the thread's status says what runs now, per thread.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackApi } from '../fakes/fake-slack-api.js';
import { lastMessageText, type FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'watch-secret';
const channel = 'C0WATCH';
let rig: SlackRig;
let slack: FakeSlackApi;
let counter = 0;

function nextTs(): string {
  counter += 1;
  return `1720000${String(counter).padStart(3, '0')}.000300`;
}

async function mention(text: string, ts: string, threadTs?: string): Promise<void> {
  const event = { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts, channel, event_ts: ts, ...(threadTs ? { thread_ts: threadTs } : {}) };
  const response = await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${ts}`, event }), 'application/json');
  expect(response.status).toBe(200);
}

const statusCalls = (threadTs: string) => slack.callsTo('assistant.threads.setStatus').filter((call) => call.args['thread_ts'] === threadTs);

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, slack: { threadStatusError: null }, users: [{ id: 'UADA', displayName: 'Ada' }] });
  slack = rig.slack;
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack thread status', () => {
  it('says which tool runs, and a refusal in one thread does not silence another', async () => {
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      const last = body.messages.at(-1);
      if (last?.['role'] === 'tool') return { content: 'Listed.', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 3 } };
      // The tool call comes after a pause, so the card (and the status) shows "thinking" first.
      return { delayMs: lastMessageText(body).includes('list') ? 1_200 : 0, toolCalls: [{ name: 'memory_list', arguments: {} }], usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 3 } };
    });
    const refused = nextTs();
    slack.refuseThreadStatus(channel, refused);
    await mention('list what you remember', refused);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === refused && String(call.args['markdown_text'] ?? '') === 'Listed.');
    expect(statusCalls(refused)).toHaveLength(1);

    const other = nextTs();
    await mention('list it here too', other);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === other && String(call.args['markdown_text'] ?? '') === 'Listed.');
    await until(() => statusCalls(other).some((call) => call.args['status'] === ''), 5_000, 'the status cleared');
    const shown = statusCalls(other).map((call) => [call.args['status'], call.args['loading_messages'] ?? []]);
    expect(shown[0]).toEqual(['is thinking…', ['Thinking…']]);
    expect(shown).toContainEqual(['is running memory_list…', ['Running memory_list…']]);
    expect(shown.at(-1)).toEqual(['', []]);
  });
});
