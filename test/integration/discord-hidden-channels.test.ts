// Under MEMORY_SCOPE=workspace the public channels of a Discord server share one memory space, and a
// channel @everyone cannot view is private: its space is its own. Whether @everyone can view it is
// computed as Discord does, from the @everyone role's permissions and the channel's overwrites
// together, and its category counts too: a Staff-only channel is private whether an @everyone deny,
// a server where @everyone sees nothing but Staff is allowed in, or a hidden category hides it. The
// real discord.js client against the fake Discord, a real agent on Postgres. Also: a new session
// whose MAIN.md another thread changed gets a note saying so (the Discord rendering of it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PermissionFlagsBits } from 'discord.js';
import { threadAddress } from '../../src/adapters/discord/ids.js';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import { allPermissions, type FakeOverwrite } from '../fakes/fake-discord-payloads.js';
import type { FakeChannel } from '../fakes/fake-discord.js';
import { scriptRoles } from '../support/model-script.js';

let rig: DiscordRig;
const view = String(PermissionFlagsBits.ViewChannel);
const staffRole = '990000000000000001';

beforeAll(async () => {
  rig = await startDiscordRig({ memoryScope: 'workspace' });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

/** The scope key of the memory space a session started in a new thread of `channel` gets. */
async function spaceOfThreadIn(channel: FakeChannel, text: string): Promise<string> {
  return (await sessionInThreadOf(channel, text)).scopeKey;
}

/** A session started in a new thread of `channel`, its thread and its space's scope key. */
async function sessionInThreadOf(channel: FakeChannel, text: string): Promise<{ thread: FakeChannel; sessionId: string; spaceId: string; scopeKey: string }> {
  const { fake } = rig;
  const thread = fake.createThread(`about ${text}`, channel);
  await rig.settle();
  scriptRoles(rig.model, { worker: [{ content: `noted: ${text}` }] });
  fake.say(thread, text, { mention: true });
  await fake.waitFor(() => fake.botMessagesIn(thread.id).find((message) => message.content === `noted: ${text}`), 30_000, `the answer in ${thread.id}`);
  const session = await rig.harness.agent.findSession(threadAddress(fake.guildId, channel.id, thread.id));
  const space = await rig.database.prisma.memorySpace.findUniqueOrThrow({ where: { id: session!.memorySpaceId } });
  await rig.quiet();
  return { thread, sessionId: session!.id, spaceId: space.id, scopeKey: space.scopeKey };
}

const everyone = (allow: string, deny: string): FakeOverwrite => ({ id: rig.fake.guildId, type: 0, allow, deny });
const staff: FakeOverwrite = { id: staffRole, type: 0, allow: view, deny: '0' };

describe('Discord channels hidden from @everyone', () => {
  it('a channel everyone sees joins the server-wide space; one hidden by an @everyone deny does not', async () => {
    expect(await spaceOfThreadIn(rig.fake.general, 'general chat')).toBe('');
    const staffOnly = rig.fake.createTextChannel('staff', { overwrites: [everyone('0', view), staff] });
    expect(await spaceOfThreadIn(staffOnly, 'staff plans')).toBe(`private:${staffOnly.id}`);
  }, 120_000);

  it('a channel under a category hidden from @everyone is private, even with no overwrite of its own', async () => {
    const category = rig.fake.createCategory('Staff area', [everyone('0', view), staff]);
    const unsynced = rig.fake.createTextChannel('staff-notes', { parentId: category.id });
    expect(await spaceOfThreadIn(unsynced, 'staff notes')).toBe(`private:${unsynced.id}`);
    const openCategory = rig.fake.createCategory('Open area');
    const lobby = rig.fake.createTextChannel('lobby', { parentId: openCategory.id });
    expect(await spaceOfThreadIn(lobby, 'lobby chat')).toBe('');
  }, 120_000);

  it('where @everyone sees no channel by its role, a channel only Staff is allowed into is private; one that allows @everyone is public', async () => {
    // The server's @everyone role lacks View Channel: channels are open only where an overwrite says so.
    rig.fake.setEveryonePermissions(allPermissions & ~PermissionFlagsBits.ViewChannel);
    const staffRoom = rig.fake.createTextChannel('staff-room', { overwrites: [staff] });
    const town = rig.fake.createTextChannel('town-square', { overwrites: [everyone(view, '0')] });
    await rig.settle();
    expect(await spaceOfThreadIn(staffRoom, 'staff room')).toBe(`private:${staffRoom.id}`);
    expect(await spaceOfThreadIn(town, 'town square')).toBe('');
    rig.fake.setEveryonePermissions(allPermissions);
    await rig.settle();
  }, 120_000);
});

describe('Discord: memory a new session inherits from another thread', () => {
  it("tells a new session's thread that the memory it starts from was changed in another thread", async () => {
    const first = await sessionInThreadOf(rig.fake.general, 'first thread');
    const key = { spaceId: first.spaceId, sessionKey: '', path: 'MAIN.md' };
    const main = (await rig.harness.stores.documents.read(key))!;
    await rig.harness.stores.documents.write(key, '# Memory\n- a rule from the first thread\n', { kind: 'person', userId: rig.fake.ada.id, name: 'Ada', sessionId: first.sessionId }, main.version);
    const second = await sessionInThreadOf(rig.fake.general, 'second thread');
    const note = await rig.botMessage(second.thread.id, (message) => message.content.startsWith('🧠'), 'the note');
    expect(note.content).toMatch(new RegExp(`^🧠 The memory I start from \\(MAIN\\.md v${main.version + 1}\\) was last changed in another thread by Ada on .* UTC; \`/hippo memory\` shows it\\.$`));
    expect(rig.fake.botMessagesIn(first.thread.id).filter((message) => message.content.startsWith('🧠'))).toEqual([]);
  }, 120_000);
});
