// "Who may do what" in Slack: ALLOWED_USERS (users and a user group), ALLOWED_CHANNELS (with `dm`),
// ADMIN_USERS, and the starter-only reset. Every refusal is an ephemeral reply and stores nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, textOf, type FakeSlackApi } from '../fakes/fake-slack-api.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'access-secret';
const general = 'C0GENERAL';
const random = 'C0RANDOM';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let counter = 0;

// The event id names the message, so a processed-event mark for it can be found by its ts.
const send = (event: Record<string, unknown>) => rig.sendEvent(event, { eventId: `EvA${++counter}-${String(event['ts'])}` });

/** A mention as Slack sends it: app_mention, and the same message as a message event. */
async function mention(user: string, text: string, ts: string, options: { channel?: string; threadTs?: string } = {}): Promise<void> {
  const channel = options.channel ?? general;
  const fields = { user, text: `<@${slack.botUserId}> ${text}`, ts, channel, event_ts: ts, ...(options.threadTs ? { thread_ts: options.threadTs } : {}) };
  await send({ type: 'app_mention', ...fields });
  await send({ type: 'message', channel_type: 'channel', ...fields });
}

async function reply(user: string, text: string, ts: string, threadTs: string): Promise<void> {
  await send({ type: 'message', channel_type: 'channel', user, text, ts, thread_ts: threadTs, channel: general, event_ts: ts });
}

async function click(user: string, actionId: string, value: string, message: { ts: string; threadTs: string }): Promise<void> {
  const payload = {
    type: 'block_actions', team: { id: slack.teamId, domain: 'hippo' }, user: { id: user, team_id: slack.teamId }, api_app_id: 'A1', token: 'legacy',
    trigger_id: `trigger-${++counter}`, channel: { id: general }, message: { type: 'message', ts: message.ts, thread_ts: message.threadTs, text: '' },
    actions: [{ type: 'button', action_id: actionId, block_id: 'b', value, action_ts: '1' }],
  };
  expect((await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded')).status).toBe(200);
}

const ephemerals = (user: string) => slack.callsTo('chat.postEphemeral').filter((call) => call.args['user'] === user);
const messageKey = (ts: string, channel = general) => `slack:${slack.teamId}:${channel}:${ts}`;

/** What a refused message must not leave behind. */
async function nothingStoredFor(ts: string, channel = general): Promise<void> {
  const key = messageKey(ts, channel);
  expect(await database.prisma.steerMessage.count({ where: { platformMessageKey: key } })).toBe(0);
  expect(await database.prisma.session.count({ where: { threadKey: ts } })).toBe(0);
  expect(await database.prisma.processedEvent.count({ where: { key: { contains: ts } } })).toBe(0);
  expect(await database.prisma.outboxItem.count({ where: { idempotencyKey: { contains: key } } })).toBe(0);
}

/** Starts a session by `user` and waits for its first answer. */
async function startSession(user: string, text: string): Promise<{ root: string; id: string }> {
  const root = rig.nextTs();
  await mention(user, text, root);
  const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
  await harness.waitForEvent('run-end', (event) => event.session.id === session.id);
  return { root, id: session.id };
}

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret,
    users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }, { id: 'UCAROL', displayName: 'Carol' }, { id: 'UADMIN', displayName: 'Admin' }],
    env: { ALLOWED_USERS: 'UADA,SENG', ALLOWED_CHANNELS: `${general},dm`, ADMIN_USERS: 'UADMIN' },
  });
  ({ database, slack, harness } = rig);
  slack.setUserGroup('SENG', ['UCAROL']);
  harness.model.respond(() => ({ content: 'On it.' }));
});

afterAll(async () => {
  await rig?.close();
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

describe('Slack access rules', () => {
  it('refuses a mention by someone not allowed with one ephemeral reply, storing nothing', async () => {
    const ts = rig.nextTs();
    await mention('UBOB', 'summarise the channel', ts);
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UBOB');
    expect(refusal.args).toMatchObject({ channel: general });
    expect(textOf(refusal)).toContain('ALLOWED_USERS');
    await settle();
    // app_mention and message are one message: explained once.
    expect(ephemerals('UBOB')).toHaveLength(1);
    await nothingStoredFor(ts);
  });

  it('lets a member of an allowed user group start a session, and records the starter', async () => {
    const { id } = await startSession('UCAROL', 'draft the release notes');
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ startedBy: 'UCAROL' });
    expect(slack.callsTo('usergroups.users.list').map((call) => call.args['usergroup'])).toContain('SENG');
  });

  it('takes a person out of an allowed user group at once when Slack says its members changed', async () => {
    await startSession('UCAROL', 'one more thing'); // the group's members are cached now
    const before = ephemerals('UCAROL').length;
    slack.setUserGroup('SENG', []);
    await send({ type: 'subteam_members_changed', subteam_id: 'SENG', team_id: slack.teamId, removed_users: ['UCAROL'], removed_users_count: 1 });
    const ts = rig.nextTs();
    await mention('UCAROL', 'and another thing', ts);
    await until(() => ephemerals('UCAROL').length === before + 1, 10_000, "Carol's refusal");
    expect(textOf(ephemerals('UCAROL').at(-1)!)).toContain('ALLOWED_USERS');
    await nothingStoredFor(ts);
    // Back in the group: allowed again at once.
    slack.setUserGroup('SENG', ['UCAROL']);
    await send({ type: 'subteam_members_changed', subteam_id: 'SENG', team_id: slack.teamId, added_users: ['UCAROL'], added_users_count: 1 });
    await startSession('UCAROL', 'back in the group');
  });

  it('refuses to start in a channel that is not listed, but lets an admin start there and in DMs when `dm` is listed', async () => {
    const ts = rig.nextTs();
    await mention('UADA', 'look at this', ts, { channel: random });
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && call.args['channel'] === random);
    expect(textOf(refusal)).toContain('ALLOWED_CHANNELS');
    await nothingStoredFor(ts, random);

    const adminTs = rig.nextTs();
    await mention('UADMIN', 'look at this', adminTs, { channel: random });
    expect(await database.prisma.session.findFirstOrThrow({ where: { threadKey: adminTs } })).toMatchObject({ channelId: random, startedBy: 'UADMIN' });

    const dmTs = rig.nextTs();
    await send({ type: 'message', channel_type: 'im', user: 'UADA', text: 'hello in private', ts: dmTs, channel: 'D0ADA', event_ts: dmTs });
    expect(await database.prisma.session.count({ where: { threadKey: dmTs, channelId: 'D0ADA' } })).toBe(1);
  });

  it('answers help and status where no session is only to people who may start one: others get the refusal, privately', async () => {
    const before = slack.callsTo('chat.postMessage').length;
    const elsewhere = rig.nextTs();
    const asks = [
      { user: 'UBOB', text: 'help', ts: rig.nextTs(), channel: general, threadTs: elsewhere, rule: 'ALLOWED_USERS' },
      { user: 'UBOB', text: 'status', ts: rig.nextTs(), channel: general, threadTs: elsewhere, rule: 'ALLOWED_USERS' },
      { user: 'UADA', text: 'help', ts: rig.nextTs(), channel: random, threadTs: undefined, rule: 'ALLOWED_CHANNELS' },
    ];
    for (const ask of asks) {
      await mention(ask.user, ask.text, ask.ts, { channel: ask.channel, ...(ask.threadTs ? { threadTs: ask.threadTs } : {}) });
      const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === ask.user && call.args['thread_ts'] === (ask.threadTs ?? ask.ts));
      expect(textOf(refusal)).toContain(ask.rule);
      await nothingStoredFor(ask.ts, ask.channel);
    }
    // Carol may start one: her help is public, so nothing was held back from the others by accident.
    await mention('UCAROL', 'help', rig.nextTs(), { threadTs: elsewhere });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === elsewhere && textOf(call).includes('In a Hippo thread you can say'));
    await settle();
    const threads = new Set([elsewhere, ...asks.map((ask) => ask.ts)]);
    const posted = slack.callsTo('chat.postMessage').slice(before).filter((call) => threads.has(String(call.args['thread_ts'])));
    expect(posted.map((call) => String(call.args['user'] ?? call.args['thread_ts']))).toEqual([elsewhere]);
  });

  it('refuses a reply by someone not allowed in a session thread (told once), and takes replies by allowed people', async () => {
    const { root, id } = await startSession('UADA', 'plan the offsite');
    // Bob asks for help in the session's thread first (help is open there), so his name is known
    // and his replies take the fast path.
    await mention('UBOB', 'help', rig.nextTs(), { threadTs: root });
    await slack.waitForCall('chat.postMessage', (call) => textOf(call).includes('In a Hippo thread you can say'));
    const first = rig.nextTs();
    await reply('UBOB', 'make it in Lisbon', first, root);
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UBOB' && call.args['thread_ts'] === root);
    expect(textOf(refusal)).toContain('ALLOWED_USERS');
    const second = rig.nextTs();
    await reply('UBOB', 'really, Lisbon', second, root);
    await settle();
    expect(ephemerals('UBOB').filter((call) => call.args['thread_ts'] === root)).toHaveLength(1);
    await nothingStoredFor(first);
    await nothingStoredFor(second);
    expect(await database.prisma.steerMessage.count({ where: { sessionId: id, authorId: 'UBOB' } })).toBe(0);

    const allowed = rig.nextTs();
    await reply('UCAROL', 'budget is 5k', allowed, root);
    expect(await database.prisma.steerMessage.count({ where: { sessionId: id, platformMessageKey: messageKey(allowed) } })).toBe(1);
  });

  it('lets only the starter and admins reset a session; anyone allowed may pause it', async () => {
    const { root, id } = await startSession('UADA', 'watch the deploy');
    const refusedTs = rig.nextTs();
    await mention('UCAROL', 'reset', refusedTs, { threadTs: root });
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UCAROL' && call.args['thread_ts'] === root);
    expect(textOf(refusal)).toBe('Only the person who started this session, or a Hippo admin, may reset it.');
    await nothingStoredFor(refusedTs);
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ resetRequested: false });

    // Raising the budget spends money: the starter's (or an admin's) call too.
    const budgetTs = rig.nextTs();
    await mention('UCAROL', 'budget 5', budgetTs, { threadTs: root });
    const budgetRefusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UCAROL' && textOf(call).includes('raise its budget'));
    expect(budgetRefusal.args['thread_ts']).toBe(root);
    await nothingStoredFor(budgetTs);
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ budgetUsd: null });

    // Stop cancels the starter's work: the card's Stop button is the starter's (or an admin's) too.
    await click('UCAROL', 'hippo_stop', id, { ts: root, threadTs: root });
    const stopRefusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UCAROL' && textOf(call).includes('may stop it'));
    expect(stopRefusal.args['thread_ts']).toBe(root);
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ stopRequestedBy: null, paused: false });

    const adminTs = rig.nextTs();
    await mention('UADMIN', 'reset', adminTs, { threadTs: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).includes('fresh context'));

    const pauseTs = rig.nextTs();
    await mention('UCAROL', 'pause', pauseTs, { threadTs: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && /paus/i.test(textOf(call)) && textOf(call).startsWith('⏸️'));
  });

  it('refuses the starter-only /hippo reset to others and every button to strangers, changing nothing', async () => {
    const { root, id } = await startSession('UADA', 'collect the metrics');
    const body = formBody({
      token: 'legacy', team_id: slack.teamId, channel_id: general, user_id: 'UCAROL', command: '/hippo', text: 'reset', thread_ts: root,
      response_url: slack.responseUrl('reset-by-carol'), trigger_id: 't1', api_app_id: 'A1',
    });
    expect((await rig.post(body, 'application/x-www-form-urlencoded')).status).toBe(200);
    const answer = await slack.waitForCall('response_url:reset-by-carol');
    expect(String(answer.args['text'])).toContain('Only the person who started this session');

    const card = slack.callsTo('chat.postMessage').find((call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_pause'));
    await click('UBOB', 'hippo_pause', id, { ts: String(card?.response?.['ts']), threadTs: root });
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UBOB' && call.args['thread_ts'] === root);
    expect(textOf(refusal)).toContain('ALLOWED_USERS');
    await settle();
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id } })).toMatchObject({ pauseRequested: false, paused: false, resetRequested: false });
    expect(harness.events.some((event) => event.type === 'pause-requested' && event.session.id === id)).toBe(false);
  });

  it('refuses the memory browser to strangers: its menus, its forms and the Home tab', async () => {
    const { root } = await startSession('UADA', 'note the deploy day');
    const menuValue = JSON.stringify({ a: 'view', d: 'doc-that-is-not-checked-yet', c: general, t: root });
    const payload = {
      type: 'block_actions', team: { id: slack.teamId, domain: 'hippo' }, user: { id: 'UBOB', team_id: slack.teamId }, api_app_id: 'A1', token: 'legacy',
      trigger_id: `trigger-${++counter}`, channel: { id: general }, message: { type: 'message', ts: root, thread_ts: root, text: '' },
      actions: [{ type: 'overflow', action_id: 'hippo_doc_menu', block_id: 'b', selected_option: { value: menuValue }, action_ts: '1' }],
    };
    expect((await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded')).status).toBe(200);
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UBOB' && call.args['thread_ts'] === root);
    expect(textOf(refusal)).toContain('ALLOWED_USERS');

    // A form submitted by a stranger (forged, or opened before the list changed) is answered with the refusal.
    const submission = {
      type: 'view_submission', team: { id: slack.teamId, domain: 'hippo' }, user: { id: 'UBOB', team_id: slack.teamId }, api_app_id: 'A1', token: 'legacy',
      view: { id: 'V1', type: 'modal', callback_id: 'hippo_edit_save', private_metadata: JSON.stringify({ d: 'no-such-document', v: 1, c: general, t: root }), state: { values: {} } },
    };
    const answer = await rig.post(formBody({ payload: JSON.stringify(submission) }), 'application/x-www-form-urlencoded');
    expect(answer.status).toBe(200);
    expect(JSON.stringify(await answer.json())).toContain('ALLOWED_USERS');

    const home = { type: 'app_home_opened', user: 'UBOB', channel: 'D0HOME', tab: 'home', event_ts: rig.nextTs() };
    await send(home);
    const published = await slack.waitForCall('views.publish', (call) => call.args['user_id'] === 'UBOB');
    expect(JSON.stringify(published.args['view'])).toContain('ALLOWED_USERS');
    expect(slack.callsTo('views.open').filter((call) => String(call.args['trigger_id']) === payload.trigger_id)).toHaveLength(0);
  });
});
