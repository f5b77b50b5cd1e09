// The run's checklist on Discord's status card: the real discord.js client against the fake Discord
// (which refuses bodies over Discord's limits), a real agent on Postgres, the fake model. The card
// shows the TODO.md plan and the tool calls as they run, edited in place through the outbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import type { FakeMessage } from '../fakes/fake-discord.js';
import { scriptRoles, slowTool } from '../support/model-script.js';

let rig: DiscordRig;
const slow = slowTool('slow done');

beforeAll(async () => {
  rig = await startDiscordRig({ tools: [slow.tool] });
});
afterAll(async () => {
  await rig?.close();
});

const checklist = (message: FakeMessage) => String(message.embeds[0]?.['description'] ?? '');
/** What Discord shows for escaped text: the backslash before punctuation is dropped. */
const shown = (text: string) => text.replace(/\\([^0-9A-Za-z\s])/g, '$1');

describe('Discord status card checklist', () => {
  it('shows the plan and the latest tool calls while the run works, never pinging from model text', async () => {
    const { fake } = rig;
    const hostile = 'Tell @everyone and <@123> about [the fix](https://evil.example)';
    const todo = `# Ship **2.0**\n- [x] Read the notes\n- [ ] ${hostile}\n- [ ] Tag the release`;
    scriptRoles(rig.model, {
      worker: [
        {
          toolCalls: [
            { id: 'plan', name: 'todo_write', arguments: { content: todo } },
            ...Array.from({ length: 9 }, (_unused, index) => ({ id: `list${index}`, name: 'memory_list', arguments: {} })),
            { id: 'read', name: 'memory_read', arguments: { path: 'NOPE.md' } },
            { id: 'slow', name: 'slow_step', arguments: {} },
          ],
        },
        { content: 'Shipped.' },
        { content: 'Next one done.' },
      ],
    });
    const mention = fake.say(fake.general, 'ship the release', { mention: true });
    const thread = await fake.waitFor(() => fake.channels.get(mention.id), 10_000, 'the thread');
    const working = await rig.botMessage(thread.id, (message) => message.content.startsWith('🔧 Running tool `slow_step`') && checklist(message).includes('⏳ `slow_step`'), 'the card showing slow_step');
    expect(checklist(working).split('\n')).toEqual([
      '**📋 Ship \\*\\*2.0\\*\\*** · 1/3 done',
      '☑️ Read the notes',
      `⬜ ${hostile.replace(/[<>@[\]():]/g, '\\$&')}`,
      '⬜ Tag the release',
      '',
      '**🔧 Tool calls** · 11',
      '+3 more',
      ...Array.from({ length: 6 }, () => '✅ `memory_list`'),
      '❌ `memory_read` · `NOPE.md`',
      '⏳ `slow_step`',
    ]);
    expect(shown(checklist(working))).toContain(`⬜ ${hostile}`);
    // The status line counts the calls the checklist lists (the TODO.md write is the plan).
    expect(working.content).toContain(' · 11 tool calls');
    expect(working.components.length).toBe(1); // Pause and Stop stay on the card

    slow.open();
    await rig.botMessage(thread.id, (message) => message.content === 'Shipped.', 'the answer');
    const done = await rig.botMessage(thread.id, (message) => message.id === working.id && message.content.startsWith('✅ Done'), 'the finished card');
    expect(checklist(done).split('\n').at(-1)).toBe('✅ `slow_step`');

    // Every card body went out with pings switched off, and Discord took every edit (no 400).
    const cardCalls = [...fake.callsTo('PATCH', new RegExp(`^/channels/${thread.id}/messages/${working.id}$`)), ...fake.callsTo('POST', new RegExp(`^/channels/${thread.id}/messages$`))];
    expect(cardCalls.length).toBeGreaterThan(1);
    for (const call of cardCalls) {
      expect(call.status).toBe(200);
      expect(call.body?.['allowed_mentions']).toEqual({ parse: [] });
    }

    // The next run's card starts from the session's TODO.md as stored: the plan is still current.
    fake.say(thread, 'and the next one');
    const next = await rig.botMessage(thread.id, (message) => message.id !== working.id && message.content.startsWith('✅ Done'), 'the second card');
    expect(checklist(next).split('\n')[0]).toBe('**📋 Ship \\*\\*2.0\\*\\*** · 1/3 done');
    expect(checklist(next)).not.toContain('Tool calls');
  });
});
