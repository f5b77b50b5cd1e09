// Search and export of memory from Slack's App Home (docs/product.md "Review memory"): the real
// Bolt app (signatures checked) against the fake Slack Web API, a real agent on Postgres. A member
// searches a space in a modal and gets its zip in their messages with Hippo; people outside the
// space's conversation or ALLOWED_USERS are refused with a clear message and get nothing.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, signedHeaders, type FakeSlackApi, type SlackCall } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { gate, roleOf } from '../support/model-script.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { unzip } from '../support/unzip.js';
import { until } from '../support/wait.js';

const project = 'C0PROJECT';
const secret = 'C0SECRET';
let rig: SlackRig;
let slack: FakeSlackApi;
let harness: AgentHarness;
let database: TestDatabase;
let counter = 0;
let projectSpace = '';
let secretSpace = '';

type Element = { type: string; action_id?: string; value?: string; text?: { text: string }; initial_value?: string };
type Block = { type: string; block_id?: string; text?: { text: string }; accessory?: Element; element?: Element; elements?: Element[] };
type View = { type: string; callback_id?: string; private_metadata?: string; blocks: Block[]; title: { text: string } };
type Answer = { response_action: string; view?: View; errors?: Record<string, string> };

const ts = () => `1730000${String(++counter).padStart(3, '0')}.000100`;

async function event(payload: Record<string, unknown>): Promise<void> {
  const response = await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `EvH${++counter}`, event: payload }), 'application/json');
  expect(response.status).toBe(200);
}

async function mention(user: string, text: string, channel: string): Promise<string> {
  const at = ts();
  await event({ type: 'app_mention', user, text: `<@${slack.botUserId}> ${text}`, ts: at, channel, event_ts: at });
  await until(async () => (await database.prisma.session.count({ where: { threadKey: at } })) > 0, 10_000, 'the session');
  return at;
}

/** Opens App Home as `user`; returns the published view. */
async function home(user: string): Promise<View> {
  const before = slack.callsTo('views.publish').length;
  await event({ type: 'app_home_opened', user, channel: `D${user}`, tab: 'home', event_ts: ts() });
  const published = await slack.waitForCall('views.publish', (call: SlackCall) => call.args['user_id'] === user && slack.callsTo('views.publish').indexOf(call) >= before);
  return published.args['view'] as View;
}

/** A click on a button in App Home (or in our modal, `in: 'modal'`); returns its trigger id. */
async function click(user: string, element: Pick<Element, 'action_id' | 'value'>, where: 'home' | 'modal' = 'home', headers?: Record<string, string>): Promise<{ trigger: string; status: number }> {
  const trigger = `trigger-h${++counter}`;
  const view = where === 'home' ? { id: 'VHOME', type: 'home' } : { id: 'VSEARCH', type: 'modal', hash: 'h', private_metadata: '' };
  const body = formBody({
    payload: JSON.stringify({
      type: 'block_actions', team: { id: slack.teamId }, user: { id: user, team_id: slack.teamId }, trigger_id: trigger,
      container: { type: 'view', view_id: view.id }, view, actions: [{ type: 'button', action_id: element.action_id, block_id: 'b', value: element.value, action_ts: '1' }],
    }),
  });
  const response = await rig.post(body, 'application/x-www-form-urlencoded', headers);
  return { trigger, status: response.status };
}

/** Submits the search modal with `words` as `user`; returns Hippo's answer in the acknowledgement. */
async function search(user: string, metadata: string, words: string): Promise<Answer> {
  const response = await rig.post(formBody({
    payload: JSON.stringify({
      type: 'view_submission', team: { id: slack.teamId }, user: { id: user, team_id: slack.teamId }, trigger_id: `trigger-h${++counter}`,
      view: { id: 'VSEARCH', type: 'modal', callback_id: 'hippo_home_search', private_metadata: metadata, hash: 'h', state: { values: { words: { words: { type: 'plain_text_input', value: words } } } } },
    }),
  }), 'application/x-www-form-urlencoded');
  expect(response.status).toBe(200);
  return (await response.json()) as Answer;
}

const buttons = (view: View) => view.blocks.flatMap((block) => [...(block.elements ?? []), ...(block.accessory ? [block.accessory] : [])]).filter((element) => element.type === 'button');
const buttonOf = (view: View, actionId: string, spaceId: string) => buttons(view).find((element) => element.action_id === actionId && element.value === JSON.stringify({ s: spaceId }));
const opened = (trigger: string) => slack.waitForCall('views.open', (call) => call.args['trigger_id'] === trigger).then((call) => call.args['view'] as View);
const text = (view: View) => JSON.stringify(view.blocks);

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret: 'home-secret',
    users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }, { id: 'UCAROL', displayName: 'Carol' }, { id: 'UDAVE', displayName: 'Dave' }],
    slack: { channelMembers: { [project]: ['UADA', 'UBOB', 'UCAROL', 'UDAVE'], [secret]: ['UCAROL'] } },
    env: { ALLOWED_USERS: 'UADA,UBOB,UCAROL' },
  });
  ({ slack, harness, database } = rig);
  harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'ok', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 2 } } : { content: 'no change' }));
  const root = await mention('UADA', 'plan the Release-Plan rollout', project);
  projectSpace = (await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } })).memorySpaceId;
  await until(async () => (await database.prisma.memoryDocument.count({ where: { spaceId: projectSpace, path: 'MAIN.md' } })) > 0, 10_000, 'MAIN.md');
  const main = await database.prisma.memoryDocument.findFirstOrThrow({ where: { spaceId: projectSpace, path: 'MAIN.md' } });
  await harness.stores.documents.write({ spaceId: projectSpace, sessionKey: '', path: 'MAIN.md' }, `${main.content}\n- Ada will den Release-Plan schreiben <!channel> <@UBOB>\n`, { kind: 'person', userId: 'UADA', name: 'Ada' }, main.version);
  const secretRoot = await mention('UCAROL', 'a secret Release-Plan', secret);
  secretSpace = (await database.prisma.session.findFirstOrThrow({ where: { threadKey: secretRoot } })).memorySpaceId;
  await until(async () => (await database.prisma.memoryDocument.count({ where: { spaceId: secretSpace } })) > 0, 10_000, 'the secret MAIN.md');
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack App Home: search', () => {
  it('offers Search and Export on the spaces a person may view, within Block Kit limits', async () => {
    const bob = await home('UBOB');
    expect(bob.blocks.length).toBeLessThanOrEqual(100);
    expect(buttonOf(bob, 'hippo_home_search', projectSpace)?.text?.text).toBe('🔎 Search');
    expect(buttonOf(bob, 'hippo_home_export', projectSpace)?.text?.text).toBe('📦 Export as zip');
    expect(buttonOf(bob, 'hippo_home_search', secretSpace)).toBeUndefined();
    const carol = await home('UCAROL');
    expect(buttonOf(carol, 'hippo_home_export', secretSpace)).toBeDefined();
    // Someone outside ALLOWED_USERS sees why, and no buttons.
    const dave = await home('UDAVE');
    expect(text(dave)).toContain('ALLOWED_USERS');
    expect(buttons(dave)).toEqual([]);
  });

  it('searches documents and conversations in a modal, keeps the words for the next search, and opens a document', async () => {
    const bob = await home('UBOB');
    const modal = await opened((await click('UBOB', buttonOf(bob, 'hippo_home_search', projectSpace)!)).trigger);
    expect(modal).toMatchObject({ type: 'modal', callback_id: 'hippo_home_search' });
    expect(text(modal)).toContain(`<#${project}>`);

    const answer = await search('UBOB', modal.private_metadata ?? '', 'Release-Plan');
    expect(answer.response_action).toBe('update');
    const results = answer.view!;
    expect(results.blocks.length).toBeLessThanOrEqual(100);
    for (const block of results.blocks) expect(block.text?.text.length ?? 0).toBeLessThanOrEqual(3000);
    expect(results.blocks.find((block) => block.block_id === 'words')?.element?.initial_value).toBe('Release-Plan');
    const shown = text(results);
    expect(shown).toContain('*📄 Documents matching “Release-Plan”*');
    expect(shown).toContain('*MAIN.md* (v');
    expect(shown).toMatch(/\*Release\*-\*Plan\*|\*Release-Plan\*/);
    // Thread text is shown, never a ping or a link of its own.
    expect(shown).toContain('&lt;!channel&gt;');
    expect(shown).not.toContain('<!channel>');
    expect(shown).toContain('*💬 Conversations matching “Release-Plan”*');
    expect(shown).toContain(`/archives/${project}/p`);
    // Nothing of the secret channel's memory.
    expect(shown).not.toContain('secret');

    const view = buttons(results).find((element) => element.text?.text === 'View')!;
    const { trigger } = await click('UBOB', view, 'modal');
    const document = await slack.waitForCall('views.push', (call) => call.args['trigger_id'] === trigger);
    expect(JSON.stringify(document.args['view'])).toContain('den Release-Plan schreiben');

    const again = await search('UBOB', modal.private_metadata ?? '', 'nothingmatchesthis');
    expect(text(again.view!)).toContain('Nothing in this memory matches “nothingmatchesthis”');
    expect(await search('UBOB', modal.private_metadata ?? '', '   ')).toEqual({ response_action: 'errors', errors: { words: 'Type the words to look for.' } });
  });

  it('answers a slow search after the acknowledgement: "Searching…" at once, the results in the modal when they come', async () => {
    const bob = await home('UBOB');
    const modal = await opened((await click('UBOB', buttonOf(bob, 'hippo_home_search', projectSpace)!)).trigger);
    // Another connection holds the conversations' table: the search waits for it (under its 5 s
    // timeout), longer than Slack waits for the acknowledgement.
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE context_messages IN ACCESS EXCLUSIVE MODE');
      const updatesBefore = slack.callsTo('views.update').length;
      const answer = await search('UBOB', modal.private_metadata ?? '', 'Release-Plan');
      expect(answer.response_action).toBe('update');
      expect(text(answer.view!)).toContain('Searching…');
      await blocker.query('COMMIT');
      const update = await slack.waitForCall('views.update', (call) => call.args['view_id'] === 'VSEARCH' && slack.callsTo('views.update').indexOf(call) >= updatesBefore);
      const results = update.args['view'] as View;
      expect(results.blocks.find((block) => block.block_id === 'words')?.element?.initial_value).toBe('Release-Plan');
      expect(text(results)).toContain('*💬 Conversations matching “Release-Plan”*');
    } finally {
      await blocker.end();
    }
  });

  it('refuses a search of a space the person may not view, whatever the form says', async () => {
    const forged = JSON.stringify({ s: secretSpace });
    const answer = await search('UBOB', forged, 'Release-Plan');
    expect(answer.response_action).toBe('update');
    expect(text(answer.view!)).toContain('conversation you are not in');
    expect(text(answer.view!)).not.toContain('Release-Plan');
    const modal = await opened((await click('UBOB', { action_id: 'hippo_home_search', value: forged })).trigger);
    expect(text(modal)).toContain('conversation you are not in');
    expect(modal.callback_id).toBeUndefined();
  });
});

describe('Slack App Home: export', () => {
  it('sends the zip to the person in their messages with Hippo and says so in a modal', async () => {
    const bob = await home('UBOB');
    const { trigger } = await click('UBOB', buttonOf(bob, 'hippo_home_export', projectSpace)!);
    expect(text(await opened(trigger))).toContain('Preparing the memory of');
    await until(async () => slack.files.uploads.length > 0, 10_000, 'the upload');
    const [upload] = slack.files.uploads;
    // Posted to the user id (chat:write alone), uploaded into the DM it named: never the channel.
    const announced = slack.callsTo('chat.postMessage').find((call) => call.args['channel'] === 'UBOB');
    expect(String(announced?.args['text'])).toMatch(/^📦 The memory of <#C0PROJECT>: \d+ memory documents? as Markdown/);
    expect(upload).toMatchObject({ channel: 'DUBOB', title: expect.stringMatching(/^hippo-memory-\d{4}-\d{2}-\d{2}\.zip$/) });
    expect(upload?.threadTs).toBeUndefined();
    const files = unzip(upload?.content ?? Buffer.alloc(0));
    expect(files.get('documents/MAIN.md')?.data.toString('utf8')).toContain('- Ada will den Release-Plan schreiben');
    expect([...files.keys()].some((name) => name.startsWith('history/MAIN.md/'))).toBe(true);
    const done = await slack.waitForCall('views.update', (call) => JSON.stringify(call.args['view']).includes('Sent to your messages with Hippo'));
    expect(JSON.stringify(done.args['view'])).toContain(upload!.title);
  });

  it('starts no second export while one is on its way, and exports again once it arrived', async () => {
    const bob = await home('UBOB');
    const exportButton = buttonOf(bob, 'hippo_home_export', projectSpace)!;
    const uploads = slack.files.uploads.length;
    const sentModals = () => slack.callsTo('views.update').filter((call) => JSON.stringify(call.args['view']).includes('Sent to your messages with Hippo')).length;
    const sentBefore = sentModals();
    // Slack is slow to finish the first upload: the export is still under way at the second click.
    const slow = gate();
    slack.script('files.completeUploadExternal', { hold: slow.promise });
    const first = await click('UBOB', exportButton);
    expect(text(await opened(first.trigger))).toContain('Preparing the memory of');
    const second = await click('UBOB', exportButton);
    expect(text(await opened(second.trigger))).toContain('An export of this memory is already on its way to your messages with Hippo.');
    slow.open();
    await until(() => slack.files.uploads.length === uploads + 1, 10_000, 'the first upload');
    // Arrived once its modal says so: until then the export is still on its way.
    await until(() => sentModals() === sentBefore + 1, 10_000, 'the first export\'s modal');
    const third = await click('UBOB', exportButton);
    expect(text(await opened(third.trigger))).toContain('Preparing the memory of');
    await until(() => slack.files.uploads.length === uploads + 2, 10_000, 'the third click\'s upload');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(slack.files.uploads.length).toBe(uploads + 2);
  });

  it('refuses an export to someone outside the conversation or ALLOWED_USERS, and to an unsigned request', async () => {
    const uploads = slack.files.uploads.length;
    const forged = { action_id: 'hippo_home_export', value: JSON.stringify({ s: secretSpace }) };
    expect(text(await opened((await click('UBOB', forged)).trigger))).toContain('conversation you are not in');
    const project = { action_id: 'hippo_home_export', value: JSON.stringify({ s: projectSpace }) };
    expect(text(await opened((await click('UDAVE', project)).trigger))).toContain('ALLOWED_USERS');
    // Bolt checks Slack's signature: a request signed with another secret reaches no handler.
    const unsigned = await click('UBOB', project, 'home', signedHeaders('not-the-secret', 'payload'));
    expect(unsigned.status).toBe(401);
    expect(slack.files.uploads.length).toBe(uploads);
    expect(slack.callsTo('views.open').filter((call) => call.args['trigger_id'] === unsigned.trigger)).toHaveLength(0);
  });
});
