// A Discord private thread (invite-only) is a conversation of its own: under the default `channel`
// scope its session gets a memory space of its own, so a public thread of the same channel neither
// reads its memory nor finds its messages with memory_search, and the memory gate lets only the
// thread's members reach that memory (asking Discord who is in the thread). The real discord.js
// client against the fake Discord, a real agent on Postgres.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buttonId, threadAddress } from '../../src/adapters/discord/ids.js';
import type { SessionRecord } from '../../src/core/store.js';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import type { FakeChannel, FakeMessage } from '../fakes/fake-discord.js';
import { scriptRoles } from '../support/model-script.js';

let rig: DiscordRig;

beforeAll(async () => {
  rig = await startDiscordRig();
});
afterAll(async () => {
  await rig?.close();
});
afterEach(async () => {
  await rig.adapter.idle();
});

/** Starts a session with `text` in `thread` (a mention inside it), after its first answer. */
async function sessionIn(thread: FakeChannel, text: string): Promise<SessionRecord> {
  scriptRoles(rig.model, { worker: [{ content: `noted: ${text}` }] });
  rig.fake.say(thread, text, { mention: true });
  // A loaded machine can take more than the rig's 10 s for a first answer.
  await rig.fake.waitFor(() => rig.fake.botMessagesIn(thread.id).find((message) => message.content === `noted: ${text}`), 30_000, `the answer in ${thread.id}`);
  return (await rig.harness.agent.findSession(threadAddress(rig.fake.guildId, rig.fake.general.id, thread.id)))!;
}

/** The words an interaction was answered with: a first reply, or the deferred answer. */
async function words(interaction: { id: string; token: string }): Promise<string> {
  const { fake } = rig;
  const first = await fake.waitFor(() => fake.callsTo('POST', new RegExp(`^/interactions/${interaction.id}/`))[0], 10_000, 'the interaction callback');
  if (first.body?.['type'] === 4) return String((first.body['data'] as { content?: string }).content);
  const edit = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${interaction.token}/messages/@original$`)).at(-1), 10_000, 'the answer');
  return String(edit.body?.['content']);
}

describe('Discord private threads', () => {
  let secret: SessionRecord;
  let open: SessionRecord;
  let publicThread: FakeChannel;
  let privateThread: FakeChannel;
  let anchor: FakeMessage;

  // Setup both tests read, whichever runs first: a private and a public thread with a session each,
  // and the memory browser opened in the private one.
  beforeAll(async () => {
    const { fake } = rig;
    privateThread = fake.createPrivateThread('launch plans', [fake.ada]);
    await rig.settle();
    secret = await sessionIn(privateThread, 'the launch code is zebra-4711');
    publicThread = fake.createThread('general chat');
    await rig.settle();
    open = await sessionIn(publicThread, 'what are we launching');
    anchor = await openBrowser(privateThread);
  }, 120_000);

  it('give a private thread a memory space of its own under the channel scope', async () => {
    const { fake } = rig;
    expect(secret.memorySpaceId).not.toBe(open.memorySpaceId);
    // Public threads of the channel still share the channel's space.
    const another = fake.createThread('more chat');
    await rig.settle();
    expect((await sessionIn(another, 'and when')).memorySpaceId).toBe(open.memorySpaceId);
    // memory_search in the public thread searches its own space: the private words are not there.
    const hits = await rig.harness.stores.context.searchOriginals(open.memorySpaceId, 'zebra', open.currentSegmentId ?? '', 10, 'test');
    expect(hits).toEqual([]);
    expect(await rig.harness.stores.context.searchOriginals(secret.memorySpaceId, 'zebra', '', 10, 'test')).not.toEqual([]);
    expect(anchor.channel_id).toBe(privateThread.id);
  }, 120_000);

  it("lets only the thread's members reach its memory from elsewhere in the channel", async () => {
    const { fake } = rig;
    const main = (await rig.harness.stores.documents.read({ spaceId: secret.memorySpaceId, sessionKey: '', path: 'MAIN.md' }))!;
    const view = buttonId('dview', secret.id, main.id);
    // Bob sees #general and its public threads, but was not invited to the private thread.
    expect(await words(fake.clickAs(anchor, view, fake.bob, { channel: publicThread }))).toContain('conversation you are not in');
    expect(await words(fake.clickAs(anchor, view, fake.bob, { channel: fake.general }))).toContain('conversation you are not in');
    // Ada is a member: Discord says so, wherever she clicks from in the guild.
    expect(await words(fake.clickAs(anchor, view, fake.ada, { channel: publicThread }))).toContain('**MAIN.md**');
    expect(await words(fake.clickAs(anchor, view, fake.ada))).toContain('**MAIN.md**');
    expect(fake.callsTo('GET', new RegExp(`^/channels/${anchor.channel_id}/thread-members/${fake.bob.id}$`)).length).toBeGreaterThan(0);
  });
});

/** `@Hippo memory` in the thread: the browser message with its menu. */
async function openBrowser(thread: FakeChannel): Promise<FakeMessage> {
  rig.fake.say(thread, 'memory', { mention: true });
  return rig.fake.waitFor(() => rig.fake.botMessagesIn(thread.id).find((message) => message.components.length > 0 && message.content.includes('**MAIN.md**')), 30_000, 'the browser');
}
