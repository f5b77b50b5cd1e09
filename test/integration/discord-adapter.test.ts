// The Discord adapter end to end: the real discord.js client against the fake Discord (REST and
// gateway), a real agent on Postgres, the fake model server.
import { MessageFlags } from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buttonId, threadAddress } from '../../src/adapters/discord/ids.js';
import { textBodies } from '../../src/adapters/discord/message-views.js';
import { buttonsOf, startDiscordRig, visibleText, type DiscordRig } from '../fakes/fake-discord-rig.js';
import { at, gate, requestsOf, scriptRoles } from '../support/model-script.js';

let rig: DiscordRig;

beforeAll(async () => {
  rig = await startDiscordRig();
});
afterAll(async () => {
  await rig?.close();
});
afterEach(async () => {
  await rig.quiet();
  rig.model.reset();
});

/** Text of every message of a model request. */
function promptText(body: { messages: Array<Record<string, unknown>> }): string {
  return body.messages.map((message) => (typeof message['content'] === 'string' ? message['content'] : '')).join('\n');
}

describe('Discord adapter: sessions', () => {
  it('registers /hippo, creates a thread from a mention, binds a session and answers in the thread', async () => {
    const { fake } = rig;
    // Guilds, guild messages, message content, DMs, and reactions in guilds and DMs (👍 / 👎 on answers).
    expect(fake.gateway.identifies[0]?.intents).toBe(1 | (1 << 9) | (1 << 15) | (1 << 12) | (1 << 10) | (1 << 13));
    // Once per start (a test that restarts the adapter may have run before this one).
    const registered = fake.callsTo('PUT', /^\/applications\/\d+\/commands$/);
    expect(registered.length).toBe(fake.gateway.identifies.length);
    expect(registered.map((call) => (call.json as Array<{ name: string }>).map((command) => command.name))).toEqual(registered.map(() => ['hippo']));

    scriptRoles(rig.model, { worker: [{ content: 'Here is the **plan**.' }] });
    const mention = fake.say(fake.general, 'plan the billing migration\nwith details', { mention: true });
    const answer = await rig.botMessage(mention.id, (message) => message.content === 'Here is the **plan**.', 'the answer');

    const [threadCall] = fake.callsTo('POST', new RegExp(`^/channels/${fake.general.id}/messages/${mention.id}/threads$`));
    expect(threadCall?.body).toMatchObject({ name: 'plan the billing migration', auto_archive_duration: 1440 });
    const session = await rig.harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, mention.id));
    expect(session).toMatchObject({ platform: 'discord', title: 'plan the billing migration' });
    expect(answer.channel_id).toBe(mention.id);
    // The first request carries the mention's text as a quoted message from its author.
    const first = requestsOf(rig.model.requests, 'worker')[0]!;
    expect(promptText(first.body)).toContain('Ada Lovelace wrote:\n> plan the billing migration\n> with details');
    await rig.reaction(mention.id, '👀');
    await rig.reaction(mention.id, '✅');
    await fake.waitFor(() => fake.reactions.some((entry) => entry.messageId === mention.id && entry.emoji === '👀' && entry.removed), 10_000, '👀 removed');
    // The status card ends as done, without buttons; typing was shown while working.
    const card = await rig.botMessage(mention.id, (message) => message.content.startsWith('✅ Done'), 'the finished card');
    expect(buttonsOf(card)).toEqual([]);
    const typing = () => fake.callsTo('POST', new RegExp(`^/channels/${mention.id}/typing$`)).length;
    expect(typing()).toBeGreaterThan(0);
    const shown = typing();
    await new Promise((resolve) => setTimeout(resolve, 500)); // the rig renews every 200 ms
    expect(typing()).toBe(shown);
    expect(rig.adapter.connected()).toBe(true);
  });

  it('turns a thread reply into a steer taken at the next checkpoint (👀, then ✅)', async () => {
    const { fake } = rig;
    const toolTurn = gate();
    scriptRoles(rig.model, {
      worker: async (_body, index) => {
        if (index === 0) {
          await toolTurn.promise;
          return at(100, { toolCalls: [{ id: 'c1', name: 'memory_list', arguments: {} }] });
        }
        return at(120, { content: index === 1 ? 'Checked both.' : 'ok' });
      },
    });
    const mention = fake.say(fake.general, 'look into the outage', { mention: true });
    await rig.model.waitFor((request) => promptText(request.body).includes('look into the outage'));
    const thread = fake.channels.get(mention.id)!;
    const reply = fake.say(thread, 'also check the CDN', { author: fake.bob });
    await rig.reaction(reply.id, '👀');
    expect(fake.reactions.some((entry) => entry.messageId === reply.id && entry.emoji === '✅')).toBe(false);
    toolTurn.open();
    await rig.reaction(reply.id, '✅');
    await rig.botMessage(thread.id, (message) => message.content === 'Checked both.');
    const workers = requestsOf(rig.model.requests, 'worker');
    // Injected after the tool result, as a quoted message with the author's display name.
    const second = workers[1]!.body.messages;
    expect(second.at(-2)?.['role']).toBe('tool');
    expect(second.at(-1)?.['content']).toBe('Bob wrote:\n> also check the CDN');
  });

  it('queues a message delivered twice (and again after a restart) once', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'started' }, { content: 'got it' }] });
    const mention = fake.say(fake.general, 'dedupe please', { mention: true });
    await rig.botMessage(mention.id, (message) => message.content === 'started');
    const thread = fake.channels.get(mention.id)!;
    const reply = fake.say(thread, 'one more thing');
    fake.redeliver(reply);
    await rig.botMessage(thread.id, (message) => message.content === 'got it');
    await rig.restart();
    fake.redeliver(reply);
    fake.redeliver(mention);
    await rig.settle();
    const key = `discord:${thread.id}:${reply.id}`;
    expect(await rig.database.prisma.steerMessage.count({ where: { platformMessageKey: key } })).toBe(1);
    expect(await rig.database.prisma.steerMessage.count({ where: { platformMessageKey: `discord:${fake.general.id}:${mention.id}` } })).toBe(1);
    // Only this session's calls: the rig (and its model) is shared by the file's tests.
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: thread.id } });
    expect(requestsOf(rig.model.requests, 'worker').filter((request) => request.body.prompt_cache_key === session.id)).toHaveLength(2);
    expect(fake.callsTo('POST', new RegExp(`/messages/${mention.id}/threads$`))).toHaveLength(1);
  });

  it('starts a session in an existing thread by reading the thread so far', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Postgres it is.' }] });
    const thread = fake.createThread('database choice');
    await new Promise((resolve) => setTimeout(resolve, 50));
    fake.say(thread, 'we should use postgres', { author: fake.bob });
    fake.say(thread, 'or maybe sqlite?');
    const mention = fake.say(thread, 'what do you think?', { mention: true });
    await rig.botMessage(thread.id, (message) => message.content === 'Postgres it is.');
    const session = await rig.harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, thread.id));
    expect(session).not.toBeNull();
    const first = String(requestsOf(rig.model.requests, 'worker')[0]!.body.messages.at(-1)?.['content']);
    expect(first).toContain('Ada Lovelace wrote:');
    expect(first).toContain('> Bob: we should use postgres\n> Ada Lovelace: or maybe sqlite?');
    expect(first.endsWith('> what do you think?')).toBe(true);
    expect(fake.callsTo('GET', new RegExp(`^/channels/${thread.id}/messages$`))[0]?.query.get('before')).toBe(mention.id);
  });

  it("starts a session from a mention of Hippo's managed role too", async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Via the role.' }] });
    const mention = fake.say(fake.general, 'role mention works?', { mention: 'role', nick: 'Ada (ops)' });
    await rig.botMessage(mention.id, (message) => message.content === 'Via the role.');
    const first = String(requestsOf(rig.model.requests, 'worker')[0]!.body.messages.at(-1)?.['content']);
    expect(first).toBe('Ada (ops) wrote:\n> role mention works?');
  });

  it('gives a DM its own session', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Hello in private.' }] });
    const dm = fake.createDm();
    fake.say(dm, 'hi hippo');
    await rig.botMessage(dm.id, (message) => message.content === 'Hello in private.');
    const session = await rig.harness.agent.findSession({ platform: 'discord', workspaceId: '@me', channelId: dm.id, threadKey: dm.id });
    expect(session?.title).toBe('hi hippo');
    const slash = fake.slash(dm, 'status');
    const reply = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${slash.token}/messages/@original$`))[0]);
    expect(String(reply.body?.['content'])).toMatch(/^\*\*Status:\*\* (idle|running)/);
  });

  it('updates a queued steer when it is edited and withdraws it when it is deleted; ignores bots', async () => {
    const { fake } = rig;
    const hold = gate();
    scriptRoles(rig.model, {
      worker: async (_body, index) => {
        if (index === 0) await hold.promise;
        return at(100, { content: index === 0 ? 'first' : 'second' });
      },
    });
    const mention = fake.say(fake.general, 'edit test', { mention: true });
    await rig.model.waitFor((request) => promptText(request.body).includes('edit test'));
    const thread = fake.channels.get(mention.id)!;
    const kept = fake.say(thread, 'use version 1');
    const dropped = fake.say(thread, 'ignore this');
    fake.say(thread, 'beep boop', { author: fake.otherBot });
    await rig.reaction(dropped.id, '👀');
    fake.edit(kept, 'use version 2');
    fake.remove(dropped);
    // The edit and the delete travel the gateway: wait until the adapter has handled both.
    await rig.settle();
    hold.open();
    await rig.botMessage(thread.id, (message) => message.content === 'second');
    const last = requestsOf(rig.model.requests, 'worker').at(-1)!.body.messages;
    const text = promptText({ messages: last });
    expect(text).toContain('> use version 2');
    expect(text).not.toContain('ignore this');
    expect(text).not.toContain('beep boop');
    expect(text).not.toContain('use version 1');
  });
});

describe('Discord adapter: answers, notes and commands', () => {
  it('splits a 5,000-character answer with a code block into three messages, the block intact', async () => {
    const { fake } = rig;
    const paragraph = (word: string, length: number) => `${word} `.repeat(Math.ceil(length / (word.length + 1))).slice(0, length).trim();
    const code = ['```ts', ...Array.from({ length: 18 }, (_unused, line) => `const value${line} = compute(${line}); // line ${line} of the code`), '```'].join('\n');
    const answer = [paragraph('alpha', 1000), code, paragraph('beta', 1900), paragraph('gamma', 1200)].join('\n\n');
    expect(answer.length).toBeGreaterThanOrEqual(5000);
    scriptRoles(rig.model, { worker: [{ content: answer }] });
    const mention = fake.say(fake.general, 'write a long answer', { mention: true });
    await rig.botMessage(mention.id, (message) => message.content.endsWith('(3/3)'), 'the last part');
    const parts = fake.botMessagesIn(mention.id).filter((message) => /\(\d\/3\)$/.test(message.content));
    expect(parts.map((message) => message.content.slice(-5))).toEqual(['(1/3)', '(2/3)', '(3/3)']);
    for (const part of parts) {
      expect(part.content.length).toBeLessThanOrEqual(2000);
      expect((part.content.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(parts[0]!.content).toContain(code);
    expect(parts.map((message) => message.content.replace(/\n\(\d\/3\)$/, '')).join('\n\n')).toBe(answer);
  });

  it('streams a long answer into one message edited at most once a second, then makes it the answer\'s first part', async () => {
    const { fake } = rig;
    const answer = Array.from({ length: 16 }, (_unused, index) => `Step ${index + 1}: ${'we stream this answer as it forms. '.repeat(4).trim()}`).join('\n\n');
    scriptRoles(rig.model, { worker: [{ content: answer, chunkDelayMs: 10 }] });
    const mention = fake.say(fake.general, 'walk me through it', { mention: true });
    const [first, second] = textBodies(answer);
    const last = await rig.botMessage(mention.id, (message) => message.content === second?.content, 'the second part');
    const streamed = fake.botMessagesIn(mention.id).find((message) => message.content === first?.content);
    expect(streamed).toBeDefined();
    // The first part is the message that was streamed into: posted with a cursor, then edited.
    const posts = fake.callsTo('POST', new RegExp(`^/channels/${mention.id}/messages$`)).filter((call) => String(call.body?.['content'] ?? '').endsWith(' ▍'));
    expect(posts).toHaveLength(1);
    const edits = fake.callsTo('PATCH', new RegExp(`^/channels/${mention.id}/messages/${streamed!.id}$`));
    expect(edits.at(-1)?.body?.['content']).toBe(first?.content);
    expect(edits.length).toBeGreaterThanOrEqual(2);
    expect(edits.length).toBeLessThanOrEqual(5);
    const times = [posts[0]!.at, ...edits.slice(0, -1).map((call) => call.at)];
    for (let index = 1; index < times.length; index += 1) expect(times[index]! - times[index - 1]!).toBeGreaterThanOrEqual(900);
    // Nothing else carries the answer: the card, the streamed first part, the second part.
    expect(fake.botMessagesIn(mention.id).filter((message) => !message.content.match(/^(🤔|✅|🔧)/)).map((message) => message.id)).toEqual([streamed!.id, last.id]);
    // No link in an answer is fetched for an embed (LINK_PREVIEWS is off), and none pings.
    const answerCalls = [...posts, ...edits, ...fake.callsTo('POST', new RegExp(`^/channels/${mention.id}/messages$`)).filter((call) => call.body?.['content'] === second?.content)];
    expect(answerCalls.length).toBeGreaterThan(2);
    for (const call of answerCalls) expect(call.body).toMatchObject({ flags: MessageFlags.SuppressEmbeds, allowed_mentions: { parse: [] } });
    expect(last['flags']).toBe(MessageFlags.SuppressEmbeds);
  });

  it('posts a compact memory note; View answers ephemerally with the diff, Revert restores the document', async () => {
    const { fake, harness } = rig;
    scriptRoles(rig.model, {
      worker: [at(400, { content: 'Noted: Fridays.' })],
      summarizer: (_body, index) =>
        index === 0
          ? { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\nThe team ships on Fridays.\n', expected_version: 1 } }] }
          : { content: 'updated' },
    });
    const mention = fake.say(fake.general, 'we ship on Fridays', { mention: true });
    const note = await rig.botMessage(mention.id, (message) => visibleText(message).includes('🧠 Memory updated'), 'the memory note');
    expect(String(note.embeds[0]?.['description'])).toMatch(/^🧠 Memory updated · MAIN\.md \+1 −\d+ · cache \d+%$/);
    expect(buttonsOf(note).map((button) => button.label)).toEqual(['View', 'Edit', 'Revert', '👍']);
    const session = (await harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, mention.id)))!;
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    expect((await harness.stores.documents.read(key))?.content).toContain('ships on Fridays');

    const view = fake.click(note, buttonsOf(note)[0]!.customId);
    const [callback] = await fake.waitFor(() => { const calls = fake.callsTo('POST', new RegExp(`^/interactions/${view.id}/`)); return calls.length ? calls : undefined; });
    expect(callback?.body).toEqual({ type: 5, data: { flags: 64 } });
    const shown = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${view.token}/messages/@original$`))[0]);
    expect(String(shown.body?.['content'])).toContain('```diff');
    expect(String(shown.body?.['content'])).toContain('+ The team ships on Fridays.');

    fake.click(note, buttonsOf(note)[2]!.customId);
    await rig.botMessage(mention.id, (message) => message.content === '↩️ Ada Lovelace reverted the memory change to MAIN.md');
    const restored = await harness.stores.documents.read(key);
    expect(restored?.content).not.toContain('Fridays');
    expect(restored?.version).toBe(3);
    await fake.waitFor(() => buttonsOf(note).some((button) => button.label === 'Reverted by Ada Lovelace' && button.disabled), 10_000, 'the note to show the revert');

    fake.click(note, buttonsOf(note)[3]!.customId, fake.bob);
    await fake.waitFor(() => buttonsOf(note).some((button) => button.label === 'Bob' && button.disabled), 10_000, 'the note to show the review');
    const versions = await rig.database.prisma.memoryDocumentVersion.findMany({ where: { reviewedBy: 'Bob' } });
    expect(versions.length).toBeGreaterThan(0);
  });

  it('shows a later change before reverting an older one (R13): the clicker chooses Undo both or Keep', async () => {
    const { fake, harness } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Sure.' }] });
    const mention = fake.say(fake.general, 'keep notes', { mention: true });
    const answer = await rig.botMessage(mention.id, (message) => message.content === 'Sure.', 'the answer');
    const session = (await harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, mention.id)))!;
    const stores = harness.stores;
    const { segment } = await stores.context.load(session.id);
    const runA = await stores.memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'summarizer', round: 21, forkPoint: 0 });
    const runB = await stores.memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'summarizer', round: 22, forkPoint: 0 });
    const notes = { spaceId: session.memorySpaceId, sessionKey: '', path: 'notes.md' };
    await stores.documents.write(notes, 'from A\n', { kind: 'summarizer', memoryRunId: runA.id });
    const byB = await stores.documents.write(notes, 'from A\nfrom B\n', { kind: 'summarizer', memoryRunId: runB.id });

    const revert = fake.click(answer, buttonId('revert', session.id, runA.id));
    const choice = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${revert.token}/messages/@original$`))[0]);
    expect(String(choice.body?.['content'])).toMatch(/\*\*notes\.md\*\* was changed again after this memory change \(v2 by background memory/);
    const rows = choice.body?.['components'] as Array<{ components: Array<{ custom_id: string; label: string }> }>;
    const [undo, keep] = rows[0]!.components;
    expect([undo!.label, keep!.label]).toEqual(['Undo both: notes.md', 'Keep']);
    expect((await stores.documents.read(notes))?.version).toBe(byB.version);

    const kept = fake.click(answer, keep!.custom_id);
    const keptReply = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${kept.token}/messages/@original$`))[0]);
    expect(String(keptReply.body?.['content'])).toContain('Nothing was changed');
    expect((await stores.documents.read(notes))?.version).toBe(byB.version);

    fake.click(answer, undo!.custom_id);
    await rig.botMessage(mention.id, (message) => message.content === '↩️ Ada Lovelace reverted the memory change to notes.md');
    expect(await stores.documents.read(notes)).toBeNull();
  });

  it('attaches a long diff as a Markdown file to the ephemeral View reply', async () => {
    const { fake } = rig;
    const long = Array.from({ length: 60 }, (_unused, line) => `- decision ${line}: keep the billing jobs idempotent`).join('\n');
    scriptRoles(rig.model, {
      worker: [at(400, { content: 'Lots noted.' })],
      summarizer: (_body, index) =>
        index === 0 ? { toolCalls: [{ id: 's1', name: 'memory_write', arguments: { path: 'notes/decisions.md', content: long, expected_version: 0 } }] } : { content: 'updated' },
    });
    const mention = fake.say(fake.general, 'remember all of this', { mention: true });
    const note = await rig.botMessage(mention.id, (message) => visibleText(message).includes('🧠 Memory updated'), 'the memory note');
    const view = fake.click(note, buttonsOf(note)[0]!.customId);
    const shown = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${view.token}/messages/@original$`))[0]);
    expect(String(shown.body?.['content'])).toMatch(/^📎 The full text \([\d,]+ characters\) is attached\.$/);
    expect(shown.files.map((file) => file.name)).toEqual(['memory-change.md']);
    expect(shown.files[0]?.content).toContain('+ - decision 59: keep the billing jobs idempotent');
  });

  it('answers /hippo status ephemerally, @Hippo status in the thread, and pauses from the card', async () => {
    const { fake, harness } = rig;
    const hold = gate();
    scriptRoles(rig.model, {
      worker: async (_body, index) => {
        if (index === 0) await hold.promise;
        return index === 0 ? at(100, { toolCalls: [{ id: 'c1', name: 'memory_list', arguments: {} }] }) : at(100, { content: 'after pause' });
      },
    });
    const mention = fake.say(fake.general, 'long task', { mention: true });
    const thread = await fake.waitFor(() => fake.channels.get(mention.id), 10_000, 'the thread');
    const card = await rig.botMessage(thread.id, (message) => message.content.startsWith('🤔 Thinking'), 'the card');
    const pause = buttonsOf(card).find((button) => button.label === 'Pause')!;
    fake.click(card, pause.customId);
    const session = (await harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, thread.id)))!;
    await fake.waitFor(() => fake.callsTo('PATCH', /\/messages\/@original$/).some((call) => String(call.body?.['content']).includes('Pausing')));
    hold.open();
    await rig.botMessage(thread.id, (message) => message.id === card.id && message.content.startsWith('⏸️ Paused'), 'the paused card');
    expect(buttonsOf(fake.botMessagesIn(thread.id).find((message) => message.id === card.id)!).map((button) => button.label)).toEqual(['Resume']);
    expect((await harness.stores.sessions.get(session.id))?.paused).toBe(true);

    const slash = fake.slash(thread, 'status');
    const reply = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${slash.token}/messages/@original$`))[0]);
    expect(fake.callsTo('POST', new RegExp(`^/interactions/${slash.id}/`))[0]?.body).toEqual({ type: 5, data: { flags: 64 } });
    expect(String(reply.body?.['content'])).toContain('**Status:** paused');

    fake.say(thread, 'status', { mention: true });
    await rig.botMessage(thread.id, (message) => message.content.startsWith('**Status:** paused'), 'the status reply');
    expect(await rig.database.prisma.steerMessage.count({ where: { sessionId: session.id } })).toBe(1);
  });

  it('cancels a hanging model call from the card\'s Stop button and shows who stopped it', async () => {
    const { fake, harness } = rig;
    scriptRoles(rig.model, { worker: (_body, index) => (index === 0 ? { hang: true } : { content: 'after the stop' }) });
    const mention = fake.say(fake.general, 'think without end', { mention: true });
    const thread = await fake.waitFor(() => fake.channels.get(mention.id), 10_000, 'the thread');
    const card = await rig.botMessage(thread.id, (message) => message.content.startsWith('🤔 Thinking'), 'the card');
    expect(buttonsOf(card).map((button) => button.label)).toEqual(['Pause', 'Stop']);
    await rig.model.waitForRequests(1);
    fake.click(card, buttonsOf(card).find((button) => button.label === 'Stop')!.customId);
    const end = await harness.waitForEvent('run-end', (event) => event.session.threadKey === thread.id);
    expect(end.reason).toBe('stopped');
    const stopped = await rig.botMessage(thread.id, (message) => message.id === card.id && message.content.startsWith('⏹️ Stopped by '), 'the stopped card');
    expect(buttonsOf(stopped).map((button) => button.label)).toEqual(['Resume']);
    fake.say(thread, 'carry on');
    await rig.botMessage(thread.id, (message) => message.content === 'after the stop');
  });

  it('posts an error note when the model keeps failing; Resume on the card continues', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: (_body, index) => (index < 3 ? { status: 500 } : { content: 'Back on track.' }) });
    const mention = fake.say(fake.general, 'flaky model', { mention: true });
    await rig.botMessage(mention.id, (message) => message.content.startsWith('⚠️ I stopped because of an error'), 'the error note');
    const note = fake.botMessagesIn(mention.id).find((message) => message.content.startsWith('⚠️'))!;
    expect(note.content).toContain('`/hippo resume`');
    const card = await rig.botMessage(mention.id, (message) => message.content.startsWith('❌ Error'), 'the failed card');
    const resume = buttonsOf(card).find((button) => button.label === 'Resume')!;
    fake.click(card, resume.customId);
    await rig.botMessage(mention.id, (message) => message.content === 'Back on track.');
  });

  it('/hippo reset posts a reset note whose button shows the memory', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'first answer' }] });
    const mention = fake.say(fake.general, 'reset me later', { mention: true });
    await rig.botMessage(mention.id, (message) => message.content === 'first answer');
    const thread = fake.channels.get(mention.id)!;
    const slash = fake.slash(thread, 'reset');
    await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${slash.token}/messages/@original$`))[0]);
    expect(fake.callsTo('POST', new RegExp(`^/interactions/${slash.id}/`))[0]?.body).toEqual({ type: 5, data: { flags: 0 } }); // public: everyone sees the reset
    const note = await rig.botMessage(thread.id, (message) => visibleText(message).includes('♻️ Context reset'), 'the reset note');
    const view = fake.click(note, buttonsOf(note)[0]!.customId);
    const shown = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${view.token}/messages/@original$`))[0]);
    expect(String(shown.body?.['content'])).toMatch(/^\*\*MAIN\.md\*\* \(v\d+\)/); // the channel's memory space
  });

  it('keeps posting through Discord server errors, in order (durable outbox)', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Delivered despite 5xx.' }] });
    const mention = fake.say(fake.general, 'survive a Discord outage', { mention: true });
    // discord.js retries a 5xx three times itself; the fifth failure reaches the outbox, which retries.
    fake.fail('POST', new RegExp(`^/channels/${mention.id}/messages$`), 502, { message: 'Bad Gateway', code: 0 }, 5);
    await rig.botMessage(mention.id, (message) => message.content === 'Delivered despite 5xx.');
    // (A note that the memory it starts from changed in an earlier test's thread may come first.)
    const posted = fake.botMessagesIn(mention.id).filter((message) => !message.content.startsWith('🧠 The memory I start from'));
    expect(posted[0]?.content).toMatch(/^(🤔 Thinking|✅ Done)/);
    expect(posted.map((message) => message.content)).toContain('Delivered despite 5xx.');
    // The thread's first post (the card, or that note) met the failures and was sent on its second attempt.
    const first = await rig.database.prisma.outboxItem.findFirstOrThrow({ where: { operation: 'post', payload: { path: ['channelId'], equals: mention.id } }, orderBy: { id: 'asc' } });
    expect(first).toMatchObject({ status: 'sent', attempts: 2 });
  });
});
