// Reviewing memory from Discord (docs/product.md "Review memory", "Who may do what"): the real
// discord.js client against the fake Discord (gateway and REST), a real agent on Postgres. The
// browser's menus, edit modals within Discord's limits with compare-and-set, history with links,
// and who may do what.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buttonId } from '../../src/adapters/discord/ids.js';
import { threadAddress } from '../../src/adapters/discord/ids.js';
import type { SessionRecord } from '../../src/core/store.js';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import * as wire from '../fakes/fake-discord-payloads.js';
import type { FakeChannel, FakeMessage, RecordedCall } from '../fakes/fake-discord.js';
import { scriptRoles } from '../support/model-script.js';
import { until } from '../support/wait.js';

let rig: DiscordRig;
let session: SessionRecord;
let thread: FakeChannel;
let anchor: FakeMessage;

type ModalInput = { type: number; custom_id: string; label: string; value?: string; max_length?: number; style: number };
type Modal = { custom_id: string; title: string; components: Array<{ type: number; components: ModalInput[] }> };
type Row = { components: Array<{ type: number; custom_id: string; label?: string; options?: Array<{ label: string; value: string }> }> };

beforeAll(async () => {
  // Ada is a memory editor by her id; the editor role makes anyone who has it one.
  rig = await startDiscordRig({ contextWindow: 100_000, env: (fake) => ({ MEMORY_EDITORS: `${fake.ada.id},${fake.teamRoleId}` }) });
  // Every test works in one session's thread, from the memory browser posted there.
  const { fake } = rig;
  scriptRoles(rig.model, { worker: [{ content: 'Started.' }] });
  const mention = fake.say(fake.general, 'start the project', { mention: true });
  await rig.botMessage(mention.id, (message) => message.content === 'Started.');
  thread = fake.channels.get(mention.id)!;
  session = (await rig.harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, thread.id)))!;
  fake.say(thread, 'memory', { mention: true });
  anchor = await rig.botMessage(thread.id, (message) => message.components.length > 0 && message.content.includes('**MAIN.md**'), 'the browser');
});

afterAll(async () => {
  await rig?.close();
});

afterEach(async () => {
  await rig.adapter.idle();
});

/** The callback a component or modal interaction was answered with. */
function callback(interaction: { id: string }): Promise<RecordedCall> {
  return rig.fake.waitFor(() => rig.fake.callsTo('POST', new RegExp(`^/interactions/${interaction.id}/`))[0], 10_000, 'the interaction callback');
}

/** The (deferred) answer's content and components. */
function answer(interaction: { token: string }): Promise<RecordedCall> {
  return rig.fake.waitFor(() => rig.fake.callsTo('PATCH', new RegExp(`/${interaction.token}/messages/@original$`)).at(-1), 10_000, 'the answer');
}

async function modalOf(interaction: { id: string }): Promise<Modal> {
  const call = await callback(interaction);
  expect(call.body?.['type']).toBe(9);
  return call.body?.['data'] as Modal;
}

const mainKey = () => ({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' });

describe('Discord memory browser', () => {
  it('`@Hippo memory` posts the list with a menu of documents, and shows the one chosen', async () => {
    const { fake } = rig;
    const menu = (anchor.components as Row[])[0]!.components[0]!;
    expect(menu.type).toBe(3);
    const main = (await rig.harness.stores.documents.read(mainKey()))!;
    expect(menu.options?.map((entry) => [entry.label, entry.value])).toEqual([['MAIN.md', main.id]]);
    const chosen = fake.select(anchor, menu.custom_id, [main.id]);
    const shown = await answer(chosen);
    expect(String(shown.body?.['content'])).toMatch(/^\*\*MAIN\.md\*\* · v1 · [\d,]+ chars · last changed .* by Hippo\n```md\n# Memory/);
    expect((shown.body!['components'] as Row[])[0]!.components.map((button) => button.label)).toEqual(['History', 'Edit', 'Undo last change', 'Pin a line']);
  });

  it('edits in a modal within Discord limits; a summarizer write in between is shown with the edit kept as a draft, nothing lost; the history shows who and why', async () => {
    const { fake, harness } = rig;
    const planKey = { spaceId: session.memorySpaceId, sessionKey: '', path: 'plan.md' };
    const plan = await harness.stores.documents.write(planKey, '# Plan\n- draft the launch\n', { kind: 'person', userId: fake.bob.id, name: 'Bob' }, 0, 'first plan');
    const modal = await modalOf(fake.click(anchor, buttonId('dedit', session.id, plan.id, { index: 0, version: plan.version })));
    expect(modal.custom_id.length).toBeLessThanOrEqual(100);
    expect(modal.title.length).toBeLessThanOrEqual(45);
    expect(modal.components.length).toBeLessThanOrEqual(5);
    const input = modal.components[0]!.components[0]!;
    expect(input).toMatchObject({ type: 4, style: 2, max_length: 4_000, custom_id: 'piece_0' });
    expect(input.label.length).toBeLessThanOrEqual(45);
    expect(input.value).toBe(plan.content);

    const run = await harness.stores.memoryRuns.start({ sessionId: session.id, segmentId: (await harness.stores.context.load(session.id)).segment.id, role: 'summarizer', round: 70, forkPoint: 0 });
    await harness.stores.documents.write(planKey, '# Plan\n- launch on Friday\n', { kind: 'summarizer', memoryRunId: run.id }, 1, 'Noted the launch.');
    const mine = '# Plan\n- budget is 10k\n';
    const conflict = await answer(fake.submitModal(thread, modal.custom_id, { piece_0: mine }));
    const content = String(conflict.body?.['content']);
    expect(content).toContain('**plan.md changed while you were editing** (v2 by background memory at');
    expect(content).toContain('Noted the launch.');
    expect(content).toContain('- launch on Friday');
    expect(content).toContain('**Your edit (kept):**\n```md\n# Plan\n- budget is 10k');
    const [again, keep] = (conflict.body!['components'] as Row[])[0]!.components;
    expect([again?.label, keep?.label]).toEqual(['Edit again with my text', 'Keep the newer text']);
    expect((await harness.stores.documents.read(planKey))?.version).toBe(2);

    const reopened = await modalOf(fake.click(anchor, again!.custom_id));
    expect(reopened.components[0]!.components[0]!.value).toBe(mine);
    const saved = await answer(fake.submitModal(thread, reopened.custom_id, { piece_0: mine }));
    expect(saved.body?.['content']).toBe('✏️ Saved plan.md (now v3).');
    expect(await harness.stores.documents.read(planKey)).toMatchObject({ version: 3, content: mine });
    const versions = await rig.database.prisma.memoryDocumentVersion.findMany({ where: { documentId: plan.id }, orderBy: { version: 'asc' } });
    expect(versions.map((version) => [version.version, version.authorKind, version.authorName, version.reason])).toEqual([
      [1, 'person', 'Bob', 'first plan'], [2, 'summarizer', '', 'Noted the launch.'], [3, 'person', 'Ada Lovelace', 'edited by Ada Lovelace'],
    ]);
    await rig.botMessage(thread.id, (message) => message.content === '✏️ Ada Lovelace edited plan.md (now v3)');

    // The history: authors, reasons and links to the threads.
    const shown = await answer(fake.click(anchor, buttonId('dhist', session.id, plan.id, { index: 0, version: 0 })));
    const lines = String(shown.body?.['content']).split('\n');
    expect(lines[0]).toBe('**History of plan.md**');
    expect(lines[1]).toMatch(new RegExp(`^• v3 · .* UTC · Ada Lovelace · edited by Ada Lovelace · \\[thread\\]\\(https://discord\\.com/channels/${fake.guildId}/${thread.id}\\)$`));
    expect(lines[2]).toMatch(/^• v2 · .* · background memory · Noted the launch\. · \[thread\]/);
    expect(lines[3]).toMatch(/^• v1 · .* · Bob · first plan/);
  });

  it('edits a long document one section at a time, each modal within 5 inputs of 4,000 characters', async () => {
    const { fake, harness } = rig;
    const section = (name: string) => `## ${name}\n${Array.from({ length: 120 }, (_unused, line) => `- ${name.toLowerCase()} ${line}: ${'y'.repeat(80)}`).join('\n')}`;
    const content = `${section('Billing')}\n\n${section('Deploys')}\n\n${section('People')}\n`;
    expect(content.length).toBeGreaterThan(20_000);
    const notes = await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'notes.md' }, content, { kind: 'person', userId: 'x', name: 'X' }, 0);
    const choose = await answer(fake.click(anchor, buttonId('dedit', session.id, notes.id, { index: 0, version: notes.version })));
    const menu = (choose.body!['components'] as Row[])[0]!.components[0]!;
    expect(menu.options?.map((entry) => entry.label)).toEqual(['Billing', 'Deploys', 'People']);
    const modal = await modalOf(fake.select(anchor, menu.custom_id, ['1']));
    const inputs = modal.components.map((row) => row.components[0]!);
    expect(inputs.length).toBeGreaterThan(1);
    expect(inputs.length).toBeLessThanOrEqual(5);
    for (const input of inputs) {
      expect(input.max_length).toBe(4_000);
      expect(input.value!.length).toBeLessThanOrEqual(4_000);
      expect(input.label.length).toBeLessThanOrEqual(45);
    }
    expect(inputs.map((input) => input.value).join('\n')).toBe(`${section('Deploys')}\n`);
    const values = Object.fromEntries(inputs.map((input, index) => [input.custom_id, index === 0 ? input.value!.replace('- deploys 0:', '- deploys ZERO:') : input.value!]));
    await answer(fake.submitModal(thread, modal.custom_id, values));
    expect((await harness.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: 'notes.md' }))?.content).toBe(content.replace('- deploys 0:', '- deploys ZERO:'));
  });

  it('opens Edit from a memory note on the document the change wrote', async () => {
    const { harness, fake } = rig;
    const run = await harness.stores.memoryRuns.start({ sessionId: session.id, segmentId: (await harness.stores.context.load(session.id)).segment.id, role: 'summarizer', round: 71, forkPoint: 0 });
    await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'decisions.md' }, '- use Postgres\n', { kind: 'summarizer', memoryRunId: run.id }, 0);
    const modal = await modalOf(fake.click(anchor, buttonId('nedit', session.id, run.id)));
    expect(modal.title).toBe('Edit decisions.md');
    expect(modal.components[0]!.components[0]!.value).toBe('- use Postgres\n');
  });

  it('answers `@Hippo memory search` in the thread and replies to `@Hippo memory export` with the zip attached', async () => {
    const { fake, harness } = rig;
    await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'release.md' }, '- ship the zebra release\n', { kind: 'person', userId: fake.ada.id, name: 'Ada Lovelace' }, 0);
    fake.say(thread, 'memory search zebra', { mention: true });
    await rig.botMessage(thread.id, (message) => message.content.startsWith('🔎 Memory matching “zebra”:') && message.content.includes('release.md'), 'the search answer');
    const asked = fake.say(thread, 'memory export', { mention: true });
    const sent = await fake.waitFor(() => fake.callsTo('POST', new RegExp(`^/channels/${thread.id}/messages$`)).find((call) => call.files.length > 0), 20_000, 'the export');
    expect(sent.json).toMatchObject({ content: expect.stringMatching(/^📦 \d+ memory documents as Markdown with front matter under documents\/, and \d+ versions under history\/\.$/), message_reference: { message_id: asked.id } });
    expect(sent.files.map((file) => file.name)).toEqual([expect.stringMatching(/^hippo-memory-\d{4}-\d{2}-\d{2}\.zip$/)]);
    // Names are stored uncompressed in a zip: the documents and their history are there.
    expect(sent.files[0]?.content.startsWith('PK')).toBe(true);
    expect(sent.files[0]?.content).toContain('history/MAIN.md/v0001.md');
  });

  it("builds an export beside the thread's queue: the next message is stored while the export waits", async () => {
    const { fake } = rig;
    // Another connection holds the versions' table: the export waits for it.
    const blocker = new pg.Client({ connectionString: rig.database.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE memory_document_versions IN ACCESS EXCLUSIVE MODE');
      const exportsBefore = fake.callsTo('POST', new RegExp(`^/channels/${thread.id}/messages$`)).filter((call) => call.files.length > 0).length;
      fake.say(thread, 'memory export', { mention: true });
      const next = fake.say(thread, 'and list the open questions too');
      await until(async () => (await rig.database.prisma.steerMessage.count({ where: { platformMessageKey: { endsWith: next.id } } })) === 1, 10_000, 'the next message stored');
      expect(fake.callsTo('POST', new RegExp(`^/channels/${thread.id}/messages$`)).filter((call) => call.files.length > 0)).toHaveLength(exportsBefore);
      await blocker.query('COMMIT');
      await fake.waitFor(() => fake.callsTo('POST', new RegExp(`^/channels/${thread.id}/messages$`)).filter((call) => call.files.length > 0).at(exportsBefore), 20_000, 'the export');
    } finally {
      await blocker.end();
    }
  });
});

describe('Discord: who may do what', () => {
  async function snapshot(): Promise<string> {
    const [versions, events, documents] = await Promise.all([
      rig.database.prisma.memoryDocumentVersion.count(), rig.database.prisma.memoryReviewEvent.count(),
      rig.database.prisma.memoryDocument.findMany({ select: { version: true, pinnedLines: true }, orderBy: { path: 'asc' } }),
    ]);
    return JSON.stringify({ versions, events, documents });
  }

  /** The words an interaction was answered with: a first reply, or the deferred answer. */
  async function words(interaction: { id: string; token: string }): Promise<string> {
    const first = await callback(interaction);
    if (first.body?.['type'] === 4) return String((first.body['data'] as { content?: string }).content);
    return String((await answer(interaction)).body?.['content']);
  }

  it('refuses another guild, another channel, and people outside MEMORY_EDITORS, for every action, changing nothing', async () => {
    const { fake } = rig;
    const main = (await rig.harness.stores.documents.read(mainKey()))!;
    const at = { index: 0, version: main.version };
    const ids = {
      view: buttonId('dview', session.id, main.id), history: buttonId('dhist', session.id, main.id, { index: 0, version: 0 }),
      edit: buttonId('dedit', session.id, main.id, at), revert: buttonId('dundook', session.id, main.id, at), pin: buttonId('dpin', session.id, main.id, at),
    };
    const before = await snapshot();
    // Another guild: its thread and parent are not this space's.
    const otherGuild = wire.snowflake();
    const foreign = wire.threadChannel(otherGuild, wire.snowflake(), 'elsewhere', fake.ada.id);
    for (const id of Object.values(ids)) expect(await words(fake.clickAs(anchor, id, fake.ada, { channel: foreign }))).toContain('another workspace');
    expect(await words(fake.submitModal(foreign, buttonId('dpinsave', session.id, main.id, at), { line: 'budget' }))).toContain('another workspace');
    expect(await words(fake.submitModal(foreign, buttonId('dsave', session.id, main.id, at), { piece_0: 'taken over' }))).toContain('another workspace');
    // Another channel of the same guild.
    const otherChannel = wire.textChannel(fake.guildId, 'random');
    const otherThread = wire.threadChannel(fake.guildId, otherChannel.id, 'other thread', fake.ada.id);
    fake.channels.set(otherChannel.id, otherChannel);
    fake.channels.set(otherThread.id, otherThread);
    for (const id of Object.values(ids)) expect(await words(fake.clickAs(anchor, id, fake.bob, { channel: otherThread }))).toContain('conversation you are not in');
    expect(await words(fake.submitModal(otherThread, buttonId('dsave', session.id, main.id, at), { piece_0: 'taken over' }, fake.bob))).toContain('conversation you are not in');
    // Bob in the thread, but not a memory editor: he may view and see the history only.
    expect(await words(fake.clickAs(anchor, ids.view, fake.bob))).toContain('**MAIN.md**');
    expect(await words(fake.clickAs(anchor, ids.history, fake.bob))).toContain('History of MAIN.md');
    for (const id of [ids.edit, ids.revert, ids.pin, buttonId('revert', session.id, main.id)]) expect(await words(fake.clickAs(anchor, id, fake.bob))).toContain('Only the memory editors');
    expect(await words(fake.submitModal(thread, buttonId('dpinsave', session.id, main.id, at), { line: 'budget' }, fake.bob))).toContain('Only the memory editors');
    // Commands too: a refused pin is a reply to Bob that changes nothing.
    fake.say(thread, 'pin budget', { mention: true, author: fake.bob });
    await rig.botMessage(thread.id, (message) => message.content.startsWith('Only the memory editors'), "Bob's refusal");
    expect(await snapshot()).toBe(before);
    // With the editor role, Bob may edit.
    expect((await callback(fake.clickAs(anchor, ids.edit, fake.bob, { roles: [fake.teamRoleId] }))).body?.['type']).toBe(9);
  });
});
