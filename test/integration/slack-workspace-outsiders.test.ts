// Under MEMORY_SCOPE=workspace the public channels of a Slack workspace share one memory space, the
// workspace's full members'. People the memory gate refuses (guests, Slack Connect members) get
// none of it: a session a guest starts runs on the channel's own space (no MAIN.md written in
// #general in its first request, no #general message from its memory_search), so does any session
// in a Slack Connect channel, and where such people read along a member's `memory search` and
// `memory export` answer only the member (ephemerally; the zip in their messages with Hippo). The
// real Bolt app against the fake Slack Web API, a real agent on Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, type FakeSlackApi, markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply, FakeRequestBody } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until, waitFor } from '../support/wait.js';

const general = 'C0GENERAL';
const mixed = 'C0MIXED'; // public, a guest among its members
const connect = 'C0CONNECT'; // a Slack Connect channel
const secret = 'Zebra Corp';
let rig: SlackRig;
let slack: FakeSlackApi;
let database: TestDatabase;
let counter = 0;
const ts = () => `1730600${String(++counter).padStart(3, '0')}.000100`;

async function mention(user: string, channel: string, text: string, thread?: string): Promise<string> {
  const at = ts();
  const event = { type: 'app_mention', user, text: `<@${slack.botUserId}> ${text}`, ts: at, channel, event_ts: at, ...(thread ? { thread_ts: thread } : {}) };
  expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json')).status).toBe(200);
  return at;
}

/** The session of a thread and its space's scope key, once it exists. */
async function sessionOf(thread: string): Promise<{ id: string; memorySpaceId: string; scopeKey: string }> {
  const session = await waitFor(async () => (await database.prisma.session.findFirst({ where: { threadKey: thread }, include: { memorySpace: true } })) ?? undefined);
  return { id: session.id, memorySpaceId: session.memorySpaceId, scopeKey: session.memorySpace.scopeKey };
}

/** Starts a session by `user` in `channel`; a late look-up on a loaded machine counts as private, so it is tried again. */
async function startIn(user: string, channel: string, text: string, wanted: string): Promise<{ root: string; scopeKey: string; memorySpaceId: string }> {
  let last = { root: '', scopeKey: '', memorySpaceId: '' };
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const root = await mention(user, channel, `${text} (${attempt})`);
    const session = await sessionOf(root);
    last = { root, scopeKey: session.scopeKey, memorySpaceId: session.memorySpaceId };
    if (session.scopeKey === wanted) break;
  }
  return last;
}

/** Worker requests whose person's message has `marker`. */
const requestsWith = (marker: string) => rig.harness.model.requests.filter((request) => roleOf(request.body) === 'worker' && JSON.stringify(request.body.messages).includes(marker));

/** The worker calls memory_search for the secret when asked "SEARCH-…", then answers. */
function worker(body: FakeRequestBody): FakeReply {
  if (roleOf(body) !== 'worker') return { content: 'no change' };
  const last = body.messages.at(-1);
  const text = JSON.stringify(body.messages);
  if (last?.['role'] === 'user' && /SEARCH-[A-Z]+/.test(String(last['content']))) return { toolCalls: [{ name: 'memory_search', arguments: { query: 'Zebra' } }] };
  return { content: text.includes('GUEST') || text.includes('CONNECT') ? 'done' : 'ok' };
}

let guestSession: { root: string; scopeKey: string; memorySpaceId: string };
let workspaceSpace = '';

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret: 'outsiders-secret',
    users: [
      { id: 'UADA', displayName: 'Ada' },
      { id: 'UBEA', displayName: 'Bea' },
      { id: 'UGUS', displayName: 'Gus', guest: 'multi' },
      { id: 'UCORA', displayName: 'Cora', teamId: 'T0PARTNER' },
    ],
    slack: {
      sharedChannels: [connect],
      channelMembers: { [general]: ['UADA', 'UBEA'], [mixed]: ['UADA', 'UGUS'], [connect]: ['UADA', 'UCORA'] },
    },
    settings: { memoryScope: 'workspace' },
  });
  ({ slack, database } = rig);
  rig.harness.model.respond(worker);
  // Ada's session in #general runs on the workspace's space: its MAIN.md and her message hold the secret.
  const start = await startIn('UADA', general, `our Q3 acquisition target is ${secret}, keep it confidential`, '');
  expect(start.scopeKey).toBe('');
  workspaceSpace = start.memorySpaceId;
  await until(async () => (await database.prisma.memoryDocument.count({ where: { spaceId: workspaceSpace, path: 'MAIN.md' } })) > 0, 10_000, 'MAIN.md');
  const key = { spaceId: workspaceSpace, sessionKey: '', path: 'MAIN.md' };
  const main = (await rig.harness.stores.documents.read(key))!;
  await rig.harness.stores.documents.write(key, `# Memory\n- Q3 acquisition target: ${secret} (confidential)\n`, { kind: 'person', userId: 'UADA', name: 'Ada' }, main.version);
}, 120_000);

afterAll(async () => {
  await rig?.close();
});

describe('Slack workspace memory and the people it is not for', () => {
  it("gives a guest's session the channel's own space: no MAIN.md of #general, no #general message from memory_search", async () => {
    guestSession = await startIn('UGUS', mixed, 'GUEST SEARCH-GUEST what is the acquisition target?', `private:${mixed}`);
    expect(guestSession.scopeKey).toBe(`private:${mixed}`);
    const done = await waitFor(() => requestsWith('SEARCH-GUEST').find((request) => JSON.stringify(request.body.messages).includes('"role":"tool"')));
    const messages = JSON.stringify(done.body.messages);
    expect(messages).toContain('No earlier messages match');
    expect(messages).not.toContain('Zebra Corp');
    // The session's first request: its init messages carry its own (new) MAIN.md, not #general's.
    expect(JSON.stringify(requestsWith('SEARCH-GUEST')[0]!.body.messages)).not.toContain('Zebra Corp');
    // Bea, a member, can still see from the workspace's space what Ada said (the search works).
    expect(await rig.harness.stores.context.searchOriginals(workspaceSpace, 'Zebra', '', 10, 'test')).not.toEqual([]);
    // His session is his to steer: a reply of his there is taken.
    const reply = ts();
    const event = { type: 'message', user: 'UGUS', text: 'GUS-OWN and the timeline?', ts: reply, thread_ts: guestSession.root, channel: mixed, event_ts: reply };
    expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json')).status).toBe(200);
    await until(async () => (await database.prisma.steerMessage.count({ where: { text: { contains: 'GUS-OWN' } } })) === 1, 10_000, "Gus's reply in his own session");
    // The channel's own space is the channel's: searched there, it answers in the thread.
    await mention('UGUS', mixed, 'memory search acquisition', guestSession.root);
    await slack.waitForCall('chat.postMessage', (call) => call.args['channel'] === mixed && call.args['thread_ts'] === guestSession.root && JSON.stringify(call.args).includes('acquisition'));
  }, 120_000);

  it('gives every session of a Slack Connect channel, a full member\'s too, the channel\'s own space', async () => {
    const cora = await startIn('UCORA', connect, 'CONNECT SEARCH-CORA what do you know?', `private:${connect}`);
    expect(cora.scopeKey).toBe(`private:${connect}`);
    const ada = await startIn('UADA', connect, 'CONNECT hello partners', `private:${connect}`);
    expect(ada.scopeKey).toBe(`private:${connect}`);
    const done = await waitFor(() => requestsWith('SEARCH-CORA').find((request) => JSON.stringify(request.body.messages).includes('"role":"tool"')));
    expect(JSON.stringify(done.body.messages)).not.toContain('Zebra Corp');
  }, 120_000);

  it("answers a member's memory search and export only to her where a guest reads along, and in the thread where none does", async () => {
    const { root, scopeKey } = await startIn('UADA', mixed, 'plans for the mixed channel', '');
    expect(scopeKey).toBe('');

    // Gus, a guest, cannot steer her session (it works from the workspace's memory): refused privately, nothing stored.
    const reply = ts();
    const event = { type: 'message', user: 'UGUS', text: 'GUS-STEER what is in your MAIN.md?', ts: reply, thread_ts: root, channel: mixed, event_ts: reply };
    expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json')).status).toBe(200);
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UGUS' && call.args['thread_ts'] === root);
    expect(String(refusal.args['text'])).toContain("guests and people from other organisations can't steer it");
    expect(await database.prisma.steerMessage.count({ where: { text: { contains: 'GUS-STEER' } } })).toBe(0);
    // What was posted in her thread that shows the memory (the session's own status cards and answers aside).
    const posts = () => slack.callsTo('chat.postMessage').filter((call) => call.args['channel'] === mixed && call.args['thread_ts'] === root && /Zebra|📦|\.zip/.test(JSON.stringify(call.args)));

    await mention('UADA', mixed, 'memory search Zebra', root);
    const hint = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && call.args['channel'] === mixed && String(call.args['text']).includes('Zebra'));
    expect(hint.args['thread_ts']).toBe(root);

    await mention('UADA', mixed, 'memory export', root);
    const sent = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && String(call.args['text']).includes('your messages with Hippo'));
    expect(String(sent.args['text'])).toContain('guests');
    await until(() => slack.files.uploads.some((upload) => upload.channel === 'DUADA'), 10_000, 'the zip in her messages with Hippo');
    // /hippo memory export there: the zip goes to her messages too, not to the session's thread.
    const slash = formBody({
      token: 'legacy', team_id: slack.teamId, channel_id: mixed, user_id: 'UADA', command: '/hippo', text: 'memory export', thread_ts: root,
      response_url: slack.responseUrl('export-in-mixed'), trigger_id: 't-export', api_app_id: 'A1',
    });
    expect((await rig.post(slash, 'application/x-www-form-urlencoded')).status).toBe(200);
    const answered = await slack.waitForCall('response_url:export-in-mixed');
    expect(String(answered.args['text'])).toContain('your messages with Hippo');
    expect(slack.files.uploads.filter((upload) => upload.channel === 'DUADA')).toHaveLength(2);
    expect(slack.files.uploads.filter((upload) => upload.channel === mixed)).toEqual([]);

    // In #general (full members only) the same search is answered in the thread.
    const home = await startIn('UADA', general, 'another general thread', '');
    await mention('UADA', general, 'memory search Zebra', home.root);
    await slack.waitForCall('chat.postMessage', (call) => call.args['channel'] === general && call.args['thread_ts'] === home.root && JSON.stringify(call.args).includes('Zebra'));
    // Gus joins #general: Slack says so, and the next search there answers Ada only.
    slack.options.channelMembers[general]!.push('UGUS');
    const joined = { type: 'member_joined_channel', user: 'UGUS', channel: general, channel_type: 'C', team: slack.teamId, event_ts: ts() };
    expect((await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event: joined }), 'application/json')).status).toBe(200);
    await mention('UADA', general, 'memory search Confidential', home.root);
    await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && call.args['channel'] === general && String(call.args['text']).includes('onfidential'));
    // The outbox sent that answer, queued after the two above: nothing of theirs reached the mixed channel's thread.
    expect(posts().map((call) => JSON.stringify(call.args))).toEqual([]);
    // Her session started from MAIN.md as Ada changed it outside any thread: its thread was told so (not what it says).
    const note = slack.callsTo('chat.postMessage').find((call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').startsWith('🧠 The memory I start from'));
    expect(String(markdownOf(note?.args))).toMatch(/^🧠 The memory I start from \(MAIN\.md v2\) was last changed outside this thread by Ada on \d{4}-\d\d-\d\d \d\d:\d\d UTC; `@hippo memory` shows it\.$/);
  }, 120_000);
});
