// "Who may do what" on Discord: users and roles in ALLOWED_USERS, ALLOWED_CHANNELS (with `dm`),
// ADMIN_USERS, and the starter-only reset. A refused message gets 🚫 (and a reply when it addressed
// Hippo), a refused interaction an ephemeral reply; nothing is stored.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buttonId } from '../../src/adapters/discord/ids.js';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import { user, type FakeChannel, type FakeMessage } from '../fakes/fake-discord-payloads.js';
import { scriptRoles } from '../support/model-script.js';

let rig: DiscordRig;
const feedback: string[] = [];
const carol = user('carol', 'Carol');
const dana = user('dana', 'Dana (admin)');

beforeAll(async () => {
  rig = await startDiscordRig({
    env: (fake) => ({ ALLOWED_USERS: `${fake.ada.id},${fake.engineersRoleId}`, ALLOWED_CHANNELS: `${fake.general.id},dm`, ADMIN_USERS: dana.id, ALLOWED_WORKSPACES: fake.guildId }),
    onFeedback: (platform, kind) => feedback.push(`${platform}:${kind}`),
  });
});
afterAll(async () => {
  await rig?.close();
});
afterEach(async () => {
  await rig.quiet();
  rig.model.reset();
});

const refused = (message: FakeMessage) => rig.fake.waitFor(() => rig.fake.reactions.some((entry) => entry.messageId === message.id && entry.emoji === '🚫'), 10_000, `🚫 on ${message.id}`);
const repliesTo = (message: FakeMessage) => rig.fake.botMessagesIn(message.channel_id).filter((entry) => (entry['message_reference'] as { message_id?: string } | undefined)?.message_id === message.id);

/** What a refused message must not leave behind. */
async function nothingStoredFor(message: FakeMessage): Promise<void> {
  const prisma = rig.database.prisma;
  expect(await prisma.steerMessage.count({ where: { platformMessageKey: { contains: message.id } } })).toBe(0);
  expect(await prisma.session.count({ where: { threadKey: message.id } })).toBe(0);
  expect(await prisma.processedEvent.count({ where: { key: { contains: message.id } } })).toBe(0);
  expect(await prisma.outboxItem.count({ where: { idempotencyKey: { contains: message.id } } })).toBe(0);
}

/** A session started by Ada in #general, with its thread, after its first answer. */
async function adasSession(text: string): Promise<{ thread: FakeChannel; sessionId: string }> {
  scriptRoles(rig.model, { worker: [{ content: `answer: ${text}` }] });
  const mention = rig.fake.say(rig.fake.general, text, { mention: true });
  await rig.botMessage(mention.id, (message) => message.content === `answer: ${text}`);
  const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: mention.id } });
  expect(session.startedBy).toBe(rig.fake.ada.id);
  return { thread: rig.fake.channels.get(mention.id)!, sessionId: session.id };
}

/** The immediate (not deferred) ephemeral answer to an interaction. */
async function ephemeralAnswer(interaction: { id: string }): Promise<Record<string, unknown>> {
  const call = await rig.fake.waitFor(() => rig.fake.callsTo('POST', new RegExp(`^/interactions/${interaction.id}/`))[0], 10_000, 'the interaction answer');
  expect(call.body).toMatchObject({ type: 4, data: { flags: 64 } });
  return call.body?.['data'] as Record<string, unknown>;
}

describe('Discord access rules', () => {
  it('refuses a mention by someone not allowed with 🚫 and a reply, creating no thread and storing nothing', async () => {
    const { fake } = rig;
    const mention = fake.say(fake.general, 'summarise this channel', { mention: true, author: fake.bob });
    await refused(mention);
    await fake.waitFor(() => repliesTo(mention)[0], 10_000, 'the refusal reply');
    expect(repliesTo(mention)[0]?.content).toContain('ALLOWED_USERS');
    expect(fake.callsTo('POST', new RegExp(`/messages/${mention.id}/threads$`))).toHaveLength(0);
    await nothingStoredFor(mention);
  });

  it('answers help and status where no session is only to people who may start one: others get the refusal', async () => {
    const { fake } = rig;
    const thread = fake.createThread('plain thread');
    await rig.settle();
    const asks = [fake.say(fake.general, '', { mention: true, author: fake.bob }), fake.say(thread, 'status', { mention: true, author: fake.bob })];
    for (const ask of asks) {
      await refused(ask);
      await fake.waitFor(() => repliesTo(ask)[0], 10_000, 'the refusal reply');
      expect(repliesTo(ask).map((reply) => reply.content)).toEqual([expect.stringContaining('ALLOWED_USERS')]);
      await nothingStoredFor(ask);
    }
    // Ada may start one: she gets the hint, so the refusals above were not an accident.
    const allowed = fake.say(thread, 'status', { mention: true });
    await rig.botMessage(thread.id, (message) => message.content.startsWith('There is no Hippo session here'), 'the hint');
    expect(repliesTo(allowed)).toHaveLength(1);
  });

  it('leaves a server outside ALLOWED_WORKSPACES that adds it, and ignores what comes from there meanwhile, storing nothing', async () => {
    const { fake } = rig;
    const other = fake.addGuild('Elsewhere');
    await fake.waitFor(() => fake.callsTo('DELETE', new RegExp(`^/users/@me/guilds/${other.guildId}$`))[0], 10_000, 'leaving the server');
    // Discord has not confirmed the leave yet: the server is still in the client's cache.
    const mention = fake.say(other.general, 'spend their money', { mention: true, author: dana });
    const slash = fake.slash(other.general, 'help', dana);
    const answer = await fake.waitFor(() => fake.callsTo('POST', new RegExp(`^/interactions/${slash.id}/`))[0], 10_000, 'the private answer');
    expect(answer.body).toMatchObject({ type: 4, data: { flags: 64, content: 'Hippo is not available in this server.' } });
    await rig.adapter.idle();
    expect(fake.botMessagesIn(other.general.id)).toEqual([]);
    expect(fake.reactions.filter((entry) => entry.channelId === other.general.id)).toEqual([]);
    expect(fake.callsTo('POST', new RegExp(`/messages/${mention.id}/threads$`))).toHaveLength(0);
    await nothingStoredFor(mention);
    expect(await rig.database.prisma.session.count({ where: { workspaceId: other.guildId } })).toBe(0);
  });

  it('lets someone with an allowed role start a session, and records the starter', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'role works' }] });
    const mention = fake.say(fake.general, 'draft the changelog', { mention: true, author: carol, roles: [fake.engineersRoleId] });
    await rig.botMessage(mention.id, (message) => message.content === 'role works');
    expect(await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: mention.id } })).toMatchObject({ startedBy: carol.id });
  });

  it('refuses to start in a channel that is not listed, except for an admin', async () => {
    const { fake } = rig;
    const random = fake.createTextChannel('random');
    await rig.settle();
    const mention = fake.say(random, 'look here', { mention: true });
    await refused(mention);
    await fake.waitFor(() => repliesTo(mention)[0], 10_000, 'the refusal reply');
    expect(repliesTo(mention)[0]?.content).toContain('ALLOWED_CHANNELS');
    await nothingStoredFor(mention);

    scriptRoles(rig.model, { worker: [{ content: 'admin starts anywhere' }] });
    const admin = fake.say(random, 'look here', { mention: true, author: dana });
    await rig.botMessage(admin.id, (message) => message.content === 'admin starts anywhere');
  });

  it('refuses a stranger\'s reply in a session thread with 🚫 only, and takes an allowed person\'s reply', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('plan the offsite');
    const stranger = fake.say(thread, 'make it in Lisbon', { author: fake.bob });
    await refused(stranger);
    await rig.settle();
    expect(repliesTo(stranger)).toHaveLength(0);
    await nothingStoredFor(stranger);

    scriptRoles(rig.model, { worker: [{ content: 'noted' }] });
    const allowed = fake.say(thread, 'budget is 5k', { author: carol, roles: [fake.engineersRoleId] });
    await rig.botMessage(thread.id, (message) => message.content === 'noted');
    expect(await rig.database.prisma.steerMessage.count({ where: { sessionId, platformMessageKey: { contains: allowed.id } } })).toBe(1);
  });

  it('lets only the starter and admins reset (mention and /hippo); anyone allowed may pause', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('watch the deploy');
    const command = fake.say(thread, 'reset', { mention: true, author: carol, roles: [fake.engineersRoleId] });
    await refused(command);
    await fake.waitFor(() => repliesTo(command)[0], 10_000, 'the refusal reply');
    expect(repliesTo(command)[0]?.content).toBe('Only the person who started this session, or a Hippo admin, may reset it.');
    await nothingStoredFor(command);

    const slash = fake.slash(thread, 'reset', carol, [fake.engineersRoleId]);
    expect((await ephemeralAnswer(slash))['content']).toContain('Only the person who started this session');
    expect(await rig.database.prisma.processedEvent.count({ where: { key: `discord:interaction:${slash.id}` } })).toBe(0);
    expect(await rig.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ resetRequested: false });

    const byAdmin = fake.slash(thread, 'reset', dana);
    await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${byAdmin.token}/messages/@original$`)).find((call) => String(call.body?.['content']).includes('fresh context')), 10_000, 'the admin reset');

    const pause = fake.slash(thread, 'pause', carol, [fake.engineersRoleId]);
    await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${pause.token}/messages/@original$`)).find((call) => String(call.body?.['content']).startsWith('⏸️')), 10_000, 'the pause answer');
  });

  it('refuses a stranger\'s click on a session\'s buttons with an ephemeral reply, changing nothing', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('run the report');
    // A Pause button as the card shows it while a run works (the card of a finished run has none).
    const card = fake.botMessagesIn(thread.id)[0]!;
    const click = fake.click(card, buttonId('pause', sessionId), fake.bob);
    expect((await ephemeralAnswer(click))['content']).toContain('ALLOWED_USERS');
    expect(await rig.database.prisma.processedEvent.count({ where: { key: `discord:interaction:${click.id}` } })).toBe(0);
    expect(await rig.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ pauseRequested: false, paused: false });
  });

  it('lets only the starter or an admin press Stop', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('compile the changelog');
    const card = fake.botMessagesIn(thread.id)[0]!;
    // Someone allowed to steer (by role) but not the starter.
    const click = fake.clickAs(card, buttonId('stop', sessionId), carol, { roles: [fake.engineersRoleId] });
    expect((await ephemeralAnswer(click))['content']).toContain('may stop it');
    expect(await rig.database.prisma.session.findUniqueOrThrow({ where: { id: sessionId } })).toMatchObject({ stopRequestedBy: null, paused: false });
  });

  it('refuses the memory browser\'s menus and forms to strangers, changing nothing', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('keep the release notes');
    const anchor = fake.botMessagesIn(thread.id)[0]!;
    const chosen = fake.select(anchor, buttonId('docs', sessionId, undefined, { index: 0, version: 0 }), ['any-document'], fake.bob);
    expect((await ephemeralAnswer(chosen))['content']).toContain('ALLOWED_USERS');
    const form = fake.submitModal(thread, buttonId('dedit', sessionId, 'any-document', { index: 0, version: 1 }), { piece_0: 'rewritten by a stranger' }, fake.bob);
    expect((await ephemeralAnswer(form))['content']).toContain('ALLOWED_USERS');
    expect(await rig.database.prisma.processedEvent.count({ where: { key: { in: [`discord:interaction:${chosen.id}`, `discord:interaction:${form.id}`] } } })).toBe(0);
  });
});

describe('Discord answer feedback', () => {
  it('records 👍 and 👎 on answers once per person (roles count), and ignores other messages, emoji and strangers', async () => {
    const { fake } = rig;
    const { thread, sessionId } = await adasSession('what is the answer');
    const answer = fake.botMessagesIn(thread.id).find((message) => message.content === 'answer: what is the answer')!;
    const card = fake.botMessagesIn(thread.id).find((message) => message.id !== answer.id)!;
    // Reactions are handled as they come, not in order: compared by kind.
    const rows = () => rig.database.prisma.answerFeedback.findMany({ orderBy: { kind: 'desc' } });
    fake.react(answer, '👍', fake.ada);
    fake.react(answer, '👍', fake.ada);
    fake.react(answer, '👎🏽', carol, [fake.engineersRoleId]);
    fake.react(answer, '🎉', fake.ada);
    fake.react(card, '👍', fake.ada);
    fake.react(answer, '👍', fake.bob);
    await rig.settle();
    await fake.waitFor(() => feedback.length >= 2 || undefined, 10_000, 'the feedback');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await rows()).map((row) => ({ kind: row.kind, userId: row.userId, messageId: row.messageId, sessionId: row.sessionId }))).toEqual([
      { kind: 'up', userId: fake.ada.id, messageId: answer.id, sessionId },
      { kind: 'down', userId: carol.id, messageId: answer.id, sessionId },
    ]);
    expect([...feedback].sort()).toEqual(['discord:down', 'discord:up']);
  });
});
