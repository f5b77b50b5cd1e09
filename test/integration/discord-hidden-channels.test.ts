// Under MEMORY_SCOPE=workspace the public channels of a Discord server share one memory space, and a
// channel @everyone cannot view is private: its space is its own. Whether @everyone can view it is
// computed as Discord does, from the @everyone role's permissions and the channel's overwrites
// together, and its category counts too: a Staff-only channel is private whether an @everyone deny,
// a server where @everyone sees nothing but Staff is allowed in, or a hidden category hides it. The
// real discord.js client against the fake Discord, a real agent on Postgres.
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
  const { fake } = rig;
  const thread = fake.createThread(`about ${text}`, channel);
  await rig.settle();
  scriptRoles(rig.model, { worker: [{ content: `noted: ${text}` }] });
  fake.say(thread, text, { mention: true });
  await fake.waitFor(() => fake.botMessagesIn(thread.id).find((message) => message.content === `noted: ${text}`), 30_000, `the answer in ${thread.id}`);
  const session = await rig.harness.agent.findSession(threadAddress(fake.guildId, channel.id, thread.id));
  const space = await rig.database.prisma.memorySpace.findUniqueOrThrow({ where: { id: session!.memorySpaceId } });
  await rig.quiet();
  return space.scopeKey;
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
