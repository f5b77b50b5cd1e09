// Under MEMORY_SCOPE=workspace the public channels of a Slack workspace share one memory space that
// belongs to no channel. Its memory is the workspace's full members': a guest (multi- or
// single-channel) or a Slack Connect member from another organisation, even one in the very
// channel the browser was opened in, is refused, as Slack's users.info says. The real Bolt app
// against the fake Slack Web API, a real agent on Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, type FakeSlackApi, type SlackCall } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until, waitFor } from '../support/wait.js';

const channel = 'C0PUBLIC';
let rig: SlackRig;
let slack: FakeSlackApi;
let database: TestDatabase;
let counter = 0;
let root = '';
const ts = () => `1730500${String(++counter).padStart(3, '0')}.000100`;
type Block = { text?: { text: string }; accessory?: { action_id: string; options: Array<{ text: { text: string }; value: string }> } };

async function mention(text: string, thread?: string): Promise<string> {
  const at = ts();
  const event = { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts: at, channel, event_ts: at, ...(thread ? { thread_ts: thread } : {}) };
  expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json')).status).toBe(200);
  return at;
}

/** `user` picks View in MAIN.md's ⋯ menu of the browser, in the session's channel; returns the trigger. */
async function view(option: { value: string }, user: string): Promise<string> {
  const trigger = `trigger-${++counter}`;
  const payload = {
    type: 'block_actions', team: { id: slack.teamId }, user: { id: user, team_id: slack.teamId }, trigger_id: trigger,
    channel: { id: channel }, message: { ts: ts(), thread_ts: root }, container: { type: 'message' },
    actions: [{ type: 'overflow', action_id: 'hippo_doc_menu', block_id: 'b', selected_option: option, action_ts: '1' }],
  };
  expect((await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded')).status).toBe(200);
  return trigger;
}

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret: 'workspace-memory-secret',
    users: [
      { id: 'UADA', displayName: 'Ada' },
      { id: 'UGUS', displayName: 'Gus', guest: 'multi' },
      { id: 'USOLO', displayName: 'Solo', guest: 'single' },
      { id: 'UCORA', displayName: 'Cora', teamId: 'T0PARTNER' },
    ],
    // Everyone is in the channel: membership of the channel is not what decides here.
    slack: { channelMembers: { [channel]: ['UADA', 'UGUS', 'USOLO', 'UCORA'] } },
    settings: { memoryScope: 'workspace' },
  });
  ({ slack, database } = rig);
  rig.harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'ok' } : { content: 'no change' }));
  // A channel whose visibility Slack did not tell within a second counts as private (its own
  // space); on a loaded machine the first look-up can be late, and its answer is then cached.
  for (let attempt = 0; attempt < 5; attempt += 1) {
    root = await mention('start the project');
    const session = await waitFor(async () => (await database.prisma.session.findFirst({ where: { threadKey: root }, include: { memorySpace: true } })) ?? undefined);
    if (session.memorySpace.scopeKey === '') break;
  }
  await until(async () => (await database.prisma.memoryDocument.count({ where: { path: 'MAIN.md' } })) > 0, 10_000, 'MAIN.md');
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack workspace-wide memory', () => {
  it('is viewed by full members only: guests and Slack Connect members are refused, in the channel itself', async () => {
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root }, include: { memorySpace: true } });
    expect(session.memorySpace).toMatchObject({ scope: 'workspace', scopeKey: '' });
    const at = await mention('memory', root);
    const list = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_doc_menu') && JSON.stringify(call.args['metadata'] ?? '').includes(at));
    const row = (list.args['blocks'] as Block[]).find((block) => block.accessory?.action_id === 'hippo_doc_menu' && block.text?.text.includes('*MAIN.md*'));
    const option = row?.accessory?.options.find((candidate) => candidate.text.text === 'View');
    expect(option).toBeDefined();

    const refusalTo = (user: string) => slack.callsTo('chat.postEphemeral').find((call: SlackCall) => call.args['user'] === user);
    for (const user of ['UGUS', 'USOLO', 'UCORA']) {
      const trigger = await view(option!, user);
      await until(() => refusalTo(user) !== undefined, 10_000, `the refusal to ${user}`);
      expect(String(refusalTo(user)!.args['text'])).toContain('guests and people from other organisations');
      expect(slack.callsTo('views.open').filter((call) => call.args['trigger_id'] === trigger)).toEqual([]);
    }
    // Ada, a full member, sees it.
    const trigger = await view(option!, 'UADA');
    const opened = await slack.waitForCall('views.open', (call) => call.args['trigger_id'] === trigger);
    expect(JSON.stringify(opened.args['view'])).toContain('MAIN.md');
  });
});
