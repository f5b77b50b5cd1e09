// Reviewing memory from Slack (docs/product.md "Review memory", "Who may do what"): the real Bolt app
// against the fake Slack Web API, a real agent on Postgres, the fake model. The browser, edits with
// compare-and-set, history, undo and pins; review signals reaching the next summarizer at the wire;
// who may do what; App Home.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, type FakeSlackApi, type SlackCall, markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { requestsOf, roleOf } from '../support/model-script.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { unzip } from '../support/unzip.js';
import { until } from '../support/wait.js';

const channel = 'C0PROJECT';
const secret = 'C0SECRET';
let rig: SlackRig;
let slack: FakeSlackApi;
let harness: AgentHarness;
let database: TestDatabase;
let counter = 0;
let root = '';
let spaceId = '';
/** Who conversations.members lists (the fake reads it at each call, so a test may change it). */
const channelMembers: Record<string, string[]> = { [channel]: ['UADA', 'UBOB', 'UCAROL'], [secret]: ['UCAROL'] };

const ts = () => `1720000${String(++counter).padStart(3, '0')}.000100`;
type Block = { type: string; block_id?: string; text?: { text: string }; accessory?: { action_id: string; options: Array<{ text: { text: string }; value: string }> }; element?: Record<string, unknown>; elements?: Array<{ action_id?: string; value?: string; text?: string }> };
type View = { callback_id?: string; private_metadata?: string; blocks: Block[]; title: { text: string } };

async function post(payload: Record<string, unknown>): Promise<Response> {
  const response = await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded');
  expect(response.status).toBe(200);
  return response;
}

async function mention(text: string, options: { user?: string; thread?: string; in?: string } = {}): Promise<string> {
  const at = ts();
  const event = { type: 'app_mention', user: options.user ?? 'UADA', text: `<@${slack.botUserId}> ${text}`, ts: at, channel: options.in ?? channel, event_ts: at, ...(options.thread ? { thread_ts: options.thread } : {}) };
  const response = await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json');
  expect(response.status).toBe(200);
  return at;
}

/** A click of a document's ⋯ menu option in a thread message (or App Home when `in` is null). */
async function menu(option: { value: string }, who: { user?: string; team?: string; in?: string | null } = {}): Promise<string> {
  const trigger = `trigger-${++counter}`;
  const where = who.in === null
    ? { container: { type: 'view', view_id: 'VHOME' }, view: { id: 'VHOME', type: 'home' } }
    : { channel: { id: who.in ?? channel }, message: { ts: ts(), thread_ts: root }, container: { type: 'message' } };
  await post({
    type: 'block_actions', team: { id: who.team ?? slack.teamId }, user: { id: who.user ?? 'UADA', team_id: who.team ?? slack.teamId }, trigger_id: trigger,
    ...where, response_url: slack.responseUrl(`menu-${counter}`),
    actions: [{ type: 'overflow', action_id: 'hippo_doc_menu', block_id: 'b', selected_option: option, action_ts: '1' }],
  });
  return trigger;
}

/** A click of a button inside one of our modals. */
async function inModal(button: { action_id?: string; value?: string }, view: View, user = 'UADA'): Promise<string> {
  const trigger = `trigger-${++counter}`;
  await post({
    type: 'block_actions', team: { id: slack.teamId }, user: { id: user, team_id: slack.teamId }, trigger_id: trigger,
    container: { type: 'view', view_id: 'VMODAL' }, view: { id: 'VMODAL', type: 'modal', hash: 'h', private_metadata: view.private_metadata ?? '' },
    actions: [{ type: 'button', action_id: button.action_id, block_id: 'b', value: button.value, action_ts: '1' }],
  });
  return trigger;
}

/** Submits a modal; returns the view it was answered with (null: closed). */
async function submit(view: View, values: Record<string, Record<string, Record<string, unknown>>>, who: { user?: string; team?: string } = {}): Promise<View | null> {
  const response = await post({
    type: 'view_submission', team: { id: who.team ?? slack.teamId }, user: { id: who.user ?? 'UADA', team_id: who.team ?? slack.teamId }, trigger_id: `trigger-${++counter}`,
    view: { id: 'VMODAL', type: 'modal', callback_id: view.callback_id, private_metadata: view.private_metadata, state: { values }, hash: 'h' },
  });
  const body = await response.text();
  return body ? (JSON.parse(body) as { view: View }).view : null;
}

const opened = (trigger: string) => slack.waitForCall('views.open', (call) => call.args['trigger_id'] === trigger).then((call) => call.args['view'] as View);
const pushed = (trigger: string) => slack.waitForCall('views.push', (call) => call.args['trigger_id'] === trigger).then((call) => call.args['view'] as View);
const text = (view: View) => JSON.stringify(view.blocks);
const pieceValue = (view: View, index: number) => String(view.blocks.find((block) => block.block_id === `piece_${index}`)?.element?.['initial_value'] ?? '');
const pieces = (values: string[]) => Object.fromEntries(values.map((value, index) => [`piece_${index}`, { text: { type: 'plain_text_input', value } }]));

async function documentRows(): Promise<Block[]> {
  const at = await mention('memory', { thread: root });
  const list = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_doc_menu') && (call.args['metadata'] as { event_payload?: Record<string, unknown> })?.event_payload?.['idempotency_key'] === `command:slack:${slack.teamId}:${channel}:${at}:browser`);
  return (list.args['blocks'] as Block[]).filter((block) => block.accessory?.action_id === 'hippo_doc_menu');
}

function option(rows: Block[], path: string, label: string): { value: string } {
  const row = rows.find((block) => block.text?.text.includes(`*${path}*`));
  const found = row?.accessory?.options.find((candidate) => candidate.text.text === label);
  if (!found) throw new Error(`no ${label} for ${path} in ${JSON.stringify(rows)}`);
  return { value: found.value };
}

const document = (path: string) => database.prisma.memoryDocument.findFirstOrThrow({ where: { spaceId, path } });

beforeAll(async () => {
  rig = await startSlackRig({
    signingSecret: 'review-secret',
    users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }, { id: 'UCAROL', displayName: 'Carol' }, { id: 'UDAVE', displayName: 'Dave' }],
    slack: { channelMembers, userGroups: { SEDITORS: ['UCAROL'] } },
    settings: { contextWindow: 10_000 },
    env: { MEMORY_EDITORS: 'UADA, SEDITORS' },
  });
  ({ slack, harness, database } = rig);
  harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'ok', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 2 } } : { content: 'no change' }));
  root = await mention('start the project');
  await until(async () => (await database.prisma.memoryDocument.count({ where: { path: 'MAIN.md' } })) > 0, 10_000, 'MAIN.md');
  spaceId = (await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } })).memorySpaceId;
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack memory browser: edit', () => {
  it('lists the documents; Edit saves a version by the person, and a summarizer write in between is shown, nothing lost; the history shows each change', async () => {
    // Only this test changes MAIN.md; other tests add documents of their own to the space.
    const rows = await documentRows();
    const mainRow = rows.find((row) => row.text?.text.startsWith('*MAIN.md*'));
    expect(mainRow?.text?.text).toMatch(/^\*MAIN\.md\* · \d+ chars · v1 · \d{4}-\d\d-\d\d \d\d:\d\d UTC by Hippo$/);
    expect(mainRow?.accessory?.options.map((entry) => entry.text.text)).toEqual(['View', 'History', 'Edit', 'Undo last change', 'Pin a line']);
    const editing = await opened(await menu(option(rows, 'MAIN.md', 'Edit')));
    expect(editing.callback_id).toBe('hippo_edit_save');
    const original = pieceValue(editing, 0);
    expect(original).toContain('Nothing remembered yet');

    // Background memory writes while Ada edits.
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const run = await harness.stores.memoryRuns.start({ sessionId: session.id, segmentId: session.currentSegmentId!, role: 'summarizer', round: 50, forkPoint: 0 });
    const main = await document('MAIN.md');
    await harness.stores.documents.write(main, '# Memory\n- launch on Friday\n', { kind: 'summarizer', memoryRunId: run.id }, 1, 'Noted the launch.');

    const mine = '# Memory\n- budget is 10k\n';
    const conflict = await submit(editing, pieces([mine]));
    expect(conflict?.callback_id).toBe('hippo_edit_save');
    expect(text(conflict!)).toContain('MAIN.md changed while you were editing* (v2 by background memory at');
    expect(text(conflict!)).toContain('Noted the launch.');
    expect(text(conflict!)).toContain('- launch on Friday'); // the newer text, shown
    expect(pieceValue(conflict!, 0)).toBe(mine); // their edit, kept
    expect((await document('MAIN.md')).version).toBe(2);

    // Ada decides: her text over the newer version.
    expect(await submit(conflict!, pieces([mine]))).toBeNull();
    const saved = await document('MAIN.md');
    expect(saved).toMatchObject({ version: 3, content: mine });
    expect(await database.prisma.memoryDocumentVersion.findFirstOrThrow({ where: { documentId: saved.id, version: 3 } })).toMatchObject({ authorKind: 'person', authorId: 'UADA', authorName: 'Ada', reason: 'edited by Ada', sessionId: session.id });
    // Nothing is lost: every version is in the history.
    expect((await database.prisma.memoryDocumentVersion.findMany({ where: { documentId: saved.id }, orderBy: { version: 'asc' } })).map((version) => version.content)).toEqual([original, '# Memory\n- launch on Friday\n', mine]);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(call.args['text'] ?? markdownOf(call.args)).includes('✏️ Ada edited MAIN.md (now v3)'));

    // The history shows each change with author, time, reason and a link to its thread.
    const history = await opened(await menu(option(await documentRows(), 'MAIN.md', 'History')));
    const lines = history.blocks.filter((block) => block.type === 'section').map((block) => block.text?.text ?? '');
    expect(lines[0]).toMatch(new RegExp(`^v3 · \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC · Ada · edited by Ada · <https://t0hippo\\.slack\\.com/archives/${channel}/p${root.replace('.', '')}\\?thread_ts=${root}&cid=${channel}\\|thread>$`));
    expect(lines[1]).toMatch(/^v2 · .* · background memory · Noted the launch\. · <https:\/\/t0hippo\.slack\.com\/archives\/.*\|thread>$/);
    expect(lines[2]).toMatch(/^v1 · .* · Hippo$/);
  });

  it('edits a long document section by section within Slack limits', async () => {
    const section = (name: string, fill: string) => `## ${name}\n${Array.from({ length: 60 }, (_unused, line) => `- ${fill} ${line}: ${'x'.repeat(70)}`).join('\n')}`;
    const content = `# Notes\n\n${section('Billing', 'invoice')}\n\n${section('Deploys', 'deploy')}\n\n${section('People', 'person')}\n`;
    const notes = await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'notes.md' }, content, { kind: 'person', userId: 'UADA', name: 'Ada' }, 0);
    const view = await opened(await menu(option(await documentRows(), 'notes.md', 'View')));
    expect(view.blocks.length).toBeLessThanOrEqual(100);
    const editButton = view.blocks.flatMap((block) => block.elements ?? []).find((element) => element.action_id === 'hippo_doc_edit')!;
    const choose = await pushed(await inModal(editButton, view));
    expect(choose.callback_id).toBe('hippo_edit_choose');
    const select = choose.blocks.find((block) => block.block_id === 'part')?.element as { options: Array<{ text: { text: string }; value: string }> };
    expect(select.options.map((entry) => entry.text.text)).toEqual(['Notes', 'Billing', 'Deploys', 'People']);
    const deploys = select.options.find((entry) => entry.text.text === 'Deploys')!;
    const form = await submit(choose, { part: { part: { type: 'static_select', selected_option: { value: deploys.value } } } });
    const inputs = form!.blocks.filter((block) => block.type === 'input');
    expect(inputs.length).toBeGreaterThan(1);
    for (const input of inputs) {
      expect(input.element?.['max_length']).toBe(3_000);
      expect(String(input.element?.['initial_value']).length).toBeLessThanOrEqual(3_000);
    }
    const values = inputs.map((_input, index) => pieceValue(form!, index));
    expect(values.join('\n')).toBe(section('Deploys', 'deploy') + '\n');
    values[0] = values[0]!.replace('- deploy 0:', '- deploy ZERO:');
    expect(await submit(form!, pieces(values))).toBeNull();
    const after = await document('notes.md');
    expect(after.version).toBe(notes.version + 1);
    expect(after.content).toBe(content.replace('- deploy 0:', '- deploy ZERO:'));
  });
});

describe('Slack review signals reach the next summarizer', () => {
  it('records an edit, a pin and an undo as review events, and the next fork carries them (checked at the wire)', async () => {
    // Documents of its own: plan.md for the edit and the pin, steps.md for the undo.
    const ada = { kind: 'person' as const, userId: 'UADA', name: 'Ada' };
    await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'plan.md' }, '# Plan\n- launch on Friday\n', ada, 0);
    const steps = await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'steps.md' }, `- deploy 0: ${'x'.repeat(20)}\n`, ada, 0);
    await harness.stores.documents.write(steps, `- deploy ZERO: ${'x'.repeat(20)}\n`, ada, steps.version);

    const editing = await opened(await menu(option(await documentRows(), 'plan.md', 'Edit')));
    expect(await submit(editing, pieces(['# Plan\n- launch on Friday\n- budget is 10k\n']))).toBeNull();
    const rows = await documentRows();
    const pinForm = await opened(await menu(option(rows, 'plan.md', 'Pin a line')));
    const lines = pinForm.blocks.find((block) => block.block_id === 'line')?.element as { options: Array<{ text: { text: string }; value: string }> };
    const budget = lines.options.find((entry) => entry.text.text === '- budget is 10k')!;
    const pinned = await submit(pinForm, { line: { line: { type: 'static_select', selected_option: { value: budget.value } } } });
    expect(text(pinned!)).toContain('📌 Pinned in plan.md: “- budget is 10k”');
    expect((await document('plan.md')).pinnedLines).toEqual(['- budget is 10k']);

    const undoForm = await opened(await menu(option(rows, 'steps.md', 'Undo last change')));
    expect(text(undoForm)).toContain('- deploy ZERO:');
    const undone = await submit(undoForm, {});
    expect(text(undone!)).toMatch(/Undid v2 of steps\.md/);
    expect((await document('steps.md')).content).toContain('- deploy 0:');

    // The next summarizer of the space: its one appended message carries all three, quoted.
    const before = requestsOf(harness.model.requests, 'summarizer').length;
    harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'done', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 2 } } : { content: 'no change' }));
    await mention('remember the plan', { thread: root });
    await until(() => requestsOf(harness.model.requests, 'summarizer').length > before, 10_000, 'a summarizer fork');
    const instruction = String(requestsOf(harness.model.requests, 'summarizer').at(-1)!.body.messages.at(-1)?.['content']);
    expect(instruction).toMatch(/UTC, Ada pinned a line in plan\.md:\n  > - budget is 10k/);
    expect(instruction).toMatch(/UTC, Ada undid a memory change to steps\.md; what that took out or put back:\n  > - - deploy ZERO: x+\n  > \+ - deploy 0: x+/);
    expect(instruction).toMatch(/UTC, Ada edited plan\.md by hand; their change:/);
    expect(instruction).toContain('plan.md: > - budget is 10k');
  });
});

describe('Slack: 👍, Edit on a note, and remember', () => {
  it('opens Edit from a memory note; a 👍 and `@hippo remember` reach the summarizer, which is told that Ada asked', async () => {
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const run = await harness.stores.memoryRuns.start({ sessionId: session.id, segmentId: session.currentSegmentId!, role: 'summarizer', round: 80, forkPoint: 0 });
    await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'decisions.md' }, '- use Postgres\n', { kind: 'summarizer', memoryRunId: run.id }, 0);
    const note = { channel: { id: channel }, message: { ts: ts(), thread_ts: root }, team: { id: slack.teamId }, user: { id: 'UADA', team_id: slack.teamId } };
    const trigger = `trigger-${++counter}`;
    await post({ type: 'block_actions', ...note, trigger_id: trigger, actions: [{ type: 'button', action_id: 'hippo_memory_edit', block_id: 'b', value: run.id, action_ts: '1' }] });
    const editing = await opened(trigger);
    expect(editing.callback_id).toBe('hippo_edit_save');
    expect(pieceValue(editing, 0)).toBe('- use Postgres\n');
    await post({ type: 'block_actions', ...note, trigger_id: `trigger-${++counter}`, actions: [{ type: 'button', action_id: 'hippo_memory_ack', block_id: 'b', value: run.id, action_ts: '1' }] });
    await until(async () => (await database.prisma.memoryReviewEvent.count({ where: { spaceId, kind: 'ack' } })) === 1, 10_000, 'the 👍 event');

    harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'ok', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 2 } } : { content: 'Nothing to add: it is already there.' }));
    const before = requestsOf(harness.model.requests, 'summarizer').length;
    await mention('remember the deploy window is Tuesday 10:00', { thread: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(call.args['text'] ?? markdownOf(call.args)).includes('Asked background memory to remember'));
    await until(() => requestsOf(harness.model.requests, 'summarizer').length > before, 10_000, 'the requested fork');
    const instruction = String(requestsOf(harness.model.requests, 'summarizer').at(-1)!.body.messages.at(-1)?.['content']);
    expect(instruction).toContain('<person-request kind="remember">\nAda asked you, with a command in the thread, to remember this:\n> the deploy window is Tuesday 10:00\n</person-request>');
    expect(instruction).toMatch(/UTC, Ada marked a memory change to decisions\.md as right \(👍\):\n  > \+ - use Postgres/);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(call.args['text'] ?? markdownOf(call.args)).startsWith('🧠 No memory change for Ada asked to remember “the deploy window is Tuesday 10:00”: Nothing to add'));
  });
});

describe('Slack: who may do what', () => {
  const actions = ['View', 'History', 'Edit', 'Undo last change', 'Pin a line'];

  async function snapshot(): Promise<string> {
    const [versions, events, documents] = await Promise.all([
      database.prisma.memoryDocumentVersion.count(), database.prisma.memoryReviewEvent.count(),
      database.prisma.memoryDocument.findMany({ where: { spaceId }, select: { version: true, pinnedLines: true }, orderBy: { path: 'asc' } }),
    ]);
    return JSON.stringify({ versions, events, documents });
  }

  it('refuses a person from another channel, another workspace, or outside MEMORY_EDITORS, for every action, changing nothing', async () => {
    const rows = await documentRows();
    const before = await snapshot();
    // Counted from here: another test may have refused the same people before.
    const earlier = slack.callsTo('chat.postEphemeral').length;
    const refusals = (user: string) => slack.callsTo('chat.postEphemeral').slice(earlier).filter((call) => call.args['user'] === user);
    // Dave is not in the channel: clicking from another channel (App Home, a forwarded payload) is refused.
    for (const label of actions) await menu(option(rows, 'MAIN.md', label), { user: 'UDAVE', in: 'C0ELSEWHERE' });
    await until(() => refusals('UDAVE').length === actions.length, 10_000, "Dave's refusals");
    expect(refusals('UDAVE').every((call) => String(call.args['text']).includes('conversation you are not in'))).toBe(true);
    // Another workspace.
    for (const label of actions) await menu(option(rows, 'MAIN.md', label), { user: 'UEVE', team: 'T0OTHER' });
    await until(() => refusals('UEVE').length === actions.length, 10_000, "Eve's refusals");
    expect(refusals('UEVE').every((call) => String(call.args['text']).includes('another workspace'))).toBe(true);
    // Bob is in the channel but not an editor: he may view and see the history, nothing else.
    for (const label of actions) await menu(option(rows, 'MAIN.md', label), { user: 'UBOB' });
    await until(() => refusals('UBOB').length === 3, 10_000, "Bob's refusals");
    expect(refusals('UBOB').every((call) => String(call.args['text']).includes('Only the memory editors'))).toBe(true);
    // Forged or replayed submissions are checked too (Dave from App Home, Bob as an editor would).
    const editing = await opened(await menu(option(rows, 'MAIN.md', 'Edit')));
    expect(text((await submit(editing, pieces(['# taken over\n']), { user: 'UDAVE' }))!)).toContain('conversation you are not in');
    expect(text((await submit(editing, pieces(['# taken over\n']), { user: 'UBOB' }))!)).toContain('Only the memory editors');
    expect(text((await submit(editing, pieces(['# taken over\n']), { user: 'UEVE', team: 'T0OTHER' }))!)).toContain('another workspace');
    // Commands: Bob may not pin, remember or revert; the refusal is his alone.
    for (const command of ['pin budget', 'remember the budget is 1M', 'revert']) await mention(command, { user: 'UBOB', thread: root });
    await until(() => refusals('UBOB').length === 6, 10_000, "Bob's command refusals");
    expect(await snapshot()).toBe(before);
    // Carol is an editor through the SEDITORS user group.
    const carol = await opened(await menu(option(rows, 'MAIN.md', 'Edit'), { user: 'UCAROL' }));
    expect(carol.callback_id).toBe('hippo_edit_save');
  });

  it('refuses the buttons of a memory note from another workspace', async () => {
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const run = await harness.stores.memoryRuns.start({ sessionId: session.id, segmentId: session.currentSegmentId!, role: 'summarizer', round: 60, forkPoint: 0 });
    await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'extra.md' }, 'x\n', { kind: 'summarizer', memoryRunId: run.id }, 0);
    const before = await database.prisma.memoryDocumentVersion.count();
    const refusals = () => slack.callsTo('chat.postEphemeral').filter((call) => call.args['user'] === 'UEVE').length;
    const earlier = refusals();
    for (const actionId of ['hippo_memory_revert', 'hippo_memory_view', 'hippo_memory_ack']) {
      await post({
        type: 'block_actions', team: { id: 'T0OTHER' }, user: { id: 'UEVE', team_id: 'T0OTHER' }, trigger_id: `t-${++counter}`,
        channel: { id: channel }, message: { ts: ts(), thread_ts: root }, actions: [{ type: 'button', action_id: actionId, block_id: 'b', value: run.id, action_ts: '1' }],
      });
    }
    await until(() => refusals() === earlier + 3, 10_000, 'the refusals');
    expect(await database.prisma.memoryDocumentVersion.count()).toBe(before);
    expect(slack.callsTo('views.open').some((call) => JSON.stringify(call.args['view']).includes('extra.md'))).toBe(false);
  });
});

describe('Slack membership changes', () => {
  /** An Events API event as Slack sends it. */
  async function slackEvent(event: Record<string, unknown>): Promise<void> {
    const response = await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json');
    expect(response.status).toBe(200);
  }
  const refusals = (user: string) => slack.callsTo('chat.postEphemeral').filter((call) => call.args['user'] === user);

  it('takes a person who left the channel out at once (member_left_channel), not a minute later', async () => {
    const rows = await documentRows();
    // From another channel the membership is looked up (and cached): Bob is in the project channel.
    expect((await opened(await menu(option(rows, 'MAIN.md', 'View'), { user: 'UBOB', in: 'C0ELSEWHERE' }))).title.text).toBeTruthy();
    const before = refusals('UBOB').length;
    channelMembers[channel] = ['UADA', 'UCAROL'];
    await slackEvent({ type: 'member_left_channel', user: 'UBOB', channel, channel_type: 'C', team: slack.teamId });
    await menu(option(rows, 'MAIN.md', 'View'), { user: 'UBOB', in: 'C0ELSEWHERE' });
    await until(() => refusals('UBOB').length === before + 1, 10_000, "Bob's refusal");
    expect(String(refusals('UBOB').at(-1)?.args['text'])).toContain('conversation you are not in');
    // Back in the channel: at once too.
    channelMembers[channel] = ['UADA', 'UBOB', 'UCAROL'];
    await slackEvent({ type: 'member_joined_channel', user: 'UBOB', channel, channel_type: 'C', team: slack.teamId });
    expect((await opened(await menu(option(rows, 'MAIN.md', 'View'), { user: 'UBOB', in: 'C0ELSEWHERE' }))).title.text).toBeTruthy();
  });

  it('takes an editor out of MEMORY_EDITORS at once when Slack says the user group changed (subteam_members_changed)', async () => {
    const rows = await documentRows();
    expect((await opened(await menu(option(rows, 'MAIN.md', 'Edit'), { user: 'UCAROL' }))).callback_id).toBe('hippo_edit_save');
    const before = refusals('UCAROL').length;
    slack.setUserGroup('SEDITORS', []);
    await slackEvent({ type: 'subteam_members_changed', subteam_id: 'SEDITORS', team_id: slack.teamId, removed_users: ['UCAROL'], removed_users_count: 1 });
    await menu(option(rows, 'MAIN.md', 'Edit'), { user: 'UCAROL' });
    await until(() => refusals('UCAROL').length === before + 1, 10_000, "Carol's refusal");
    expect(String(refusals('UCAROL').at(-1)?.args['text'])).toContain('Only the memory editors');
    slack.setUserGroup('SEDITORS', ['UCAROL']);
    await slackEvent({ type: 'subteam_updated', subteam: { id: 'SEDITORS', team_id: slack.teamId } });
    expect((await opened(await menu(option(rows, 'MAIN.md', 'Edit'), { user: 'UCAROL' }))).callback_id).toBe('hippo_edit_save');
  });
});

describe('Slack App Home', () => {
  it('lists only the memory spaces of channels the person is in', async () => {
    const secretRoot = await mention('a secret project', { user: 'UCAROL', in: secret });
    await until(async () => (await database.prisma.session.count({ where: { threadKey: secretRoot } })) > 0, 10_000, 'the secret session');
    const secretSpace = (await database.prisma.session.findFirstOrThrow({ where: { threadKey: secretRoot } })).memorySpaceId;
    await until(async () => (await database.prisma.memoryDocument.count({ where: { spaceId: secretSpace } })) > 0, 10_000, 'its MAIN.md');
    const home = async (user: string): Promise<string> => {
      const event = { type: 'app_home_opened', user, channel: 'D0HOME', tab: 'home', event_ts: ts() };
      await rig.post(JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${++counter}`, event }), 'application/json');
      const published = await slack.waitForCall('views.publish', (call: SlackCall) => call.args['user_id'] === user && !seen.has(call));
      seen.add(published);
      const view = published.args['view'] as { type: string; blocks: Block[] };
      expect(view.type).toBe('home');
      expect(view.blocks.length).toBeLessThanOrEqual(100);
      return JSON.stringify(view.blocks);
    };
    const seen = new Set<SlackCall>();
    const bob = await home('UBOB');
    expect(bob).toContain(`<#${channel}>`);
    expect(bob).toContain('MAIN.md');
    expect(bob).not.toContain(`<#${secret}>`);
    const carol = await home('UCAROL');
    expect(carol).toContain(`<#${channel}>`);
    expect(carol).toContain(`<#${secret}>`);
    const dave = await home('UDAVE');
    expect(dave).not.toContain('<#');
    expect(dave).toContain('No memory yet in any conversation you are part of');

    // From App Home a document opens after the membership check: Carol is in the secret channel, Bob is not.
    const carolBlocks = JSON.parse(carol) as Block[];
    const header = carolBlocks.findIndex((block) => block.text?.text === `*<#${secret}>*`);
    const secretView = carolBlocks.slice(header).find((block) => block.accessory)?.accessory?.options.find((entry) => entry.text.text === 'View');
    expect(secretView).toBeDefined();
    expect(text(await opened(await menu(secretView!, { user: 'UCAROL', in: null })))).toContain('MAIN.md');
    expect(text(await opened(await menu(secretView!, { user: 'UBOB', in: null })))).toContain('conversation you are not in');
  });
});

describe('memory search and export from Slack', () => {
  it('answers `@hippo memory search` in the thread and uploads `@hippo memory export` there as a zip', async () => {
    // A document of its own (another test owns MAIN.md's versions).
    await harness.stores.documents.write({ spaceId, sessionKey: '', path: 'release.md' }, '# Release\n- Ada will den Release-Plan schreiben\n', { kind: 'person', userId: 'UADA', name: 'Ada' }, 0);
    const searched = await mention('memory search Release-Plan', { thread: root });
    const answer = await slack.waitForCall('chat.postMessage', (call) => String((call.args['metadata'] as { event_payload?: Record<string, unknown> })?.event_payload?.['idempotency_key']).startsWith(`command:slack:${slack.teamId}:${channel}:${searched}`));
    expect(answer.args['thread_ts']).toBe(root);
    expect(String(markdownOf(answer.args) ?? answer.args['text'])).toMatch(/Memory matching “Release-Plan”[\s\S]*release\.md/);
    await mention('memory export', { thread: root });
    await until(async () => slack.files.uploads.length > 0, 10_000, 'the export upload');
    const [upload] = slack.files.uploads;
    expect(upload).toMatchObject({ channel, threadTs: root, title: expect.stringMatching(/^hippo-memory-\d{4}-\d{2}-\d{2}\.zip$/) });
    const files = unzip(upload?.content ?? Buffer.alloc(0));
    expect(files.get('documents/release.md')?.data.toString('utf8')).toContain('- Ada will den Release-Plan schreiben');
    expect(files.has('documents/MAIN.md')).toBe(true);
    expect(files.has('history/MAIN.md/v0001.md')).toBe(true);
  });
});
