// R23 on Discord: the approval card in the thread, decided by the session's starter (or an admin,
// or an approver); anyone else's click is answered only to them and changes nothing; the card
// then says who decided what, and the call runs once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveApprovalPolicy } from '../../src/core/approval-policy.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { buttonsOf, startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import { conversation, requestsOf, scriptRoles } from '../support/model-script.js';

let rig: DiscordRig;
const ran: string[] = [];
const shell = defineTool({
  name: 'shell',
  description: 'Runs a command.',
  input: z.object({ command: z.string() }),
  execute: async ({ command }) => {
    ran.push(command);
    return `ran ${command}`;
  },
}) as AnyTool;

beforeAll(async () => {
  const policy = resolveApprovalPolicy([{ tool: shell, group: 'shell' }], 'shell', '');
  rig = await startDiscordRig({ tools: [shell], approvals: { policy, timeoutMs: 60_000, pollMs: 60_000 } });
  rig.harness.agent.runners.startSweeping();
});
afterAll(async () => {
  await rig?.close();
});
afterEach(async () => {
  await rig.quiet();
  rig.model.reset();
  ran.length = 0;
});

/** The interaction's ephemeral answer (the deferred reply, edited). */
async function answerTo(token: string): Promise<string> {
  const { fake } = rig;
  const reply = await fake.waitFor(() => fake.callsTo('PATCH', new RegExp(`/${token}/messages/@original$`))[0], 10_000, 'the answer');
  return String(reply.body?.['content']);
}

describe('Discord approval cards (R23)', () => {
  it('holds a shell command for the starter: Bob is refused, Approve runs it once, a second Approve changes nothing', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ toolCalls: [{ id: 's1', name: 'shell', arguments: { command: 'echo @everyone ```x```' } }] }, { content: 'Echoed.' }] });
    const mention = fake.say(fake.general, 'echo something', { mention: true });
    const thread = await fake.waitFor(() => fake.channels.get(mention.id), 10_000, 'the thread');
    const card = await rig.botMessage(thread.id, (message) => message.content.startsWith('✋ Hippo wants to run `shell`'), 'the approval card');
    expect(card.content).toContain("for Ada Lovelace's request");
    expect(card.content).toContain('echo @everyone `\u200b`\u200b`\u200bx`\u200b`\u200b`\u200b');
    expect(buttonsOf(card).map((button) => button.label)).toEqual(['Approve', 'Deny', 'Approve shell for this run']);
    await rig.botMessage(thread.id, (message) => message.content.startsWith('✋ Waiting for approval: `shell`'), 'the status card');
    const approve = buttonsOf(card).find((button) => button.label === 'Approve')!.customId;

    const refused = fake.click(card, approve, fake.bob);
    expect(await answerTo(refused.token)).toContain('Only the person who started this session, an admin or an approver');
    expect(ran).toEqual([]);

    const accepted = fake.click(card, approve);
    expect(await answerTo(accepted.token)).toMatch(/^✅ Approved by Ada Lovelace at \d\d:\d\d UTC\.$/);
    await rig.botMessage(thread.id, (message) => message.content === 'Echoed.', 'the answer');
    expect(ran).toEqual(['echo @everyone ```x```']);
    const decided = await rig.botMessage(thread.id, (message) => message.id === card.id && message.content.includes('✅ Approved by Ada Lovelace'), 'the decided card');
    expect(buttonsOf(decided)).toEqual([]);

    const again = fake.click(card, approve);
    expect(await answerTo(again.token)).toMatch(/^Already decided: ✅ Approved by Ada Lovelace/);
    expect(ran).toHaveLength(1);
  });

  it('tells the model who denied the call', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ toolCalls: [{ id: 's1', name: 'shell', arguments: { command: 'rm -rf /' } }] }, { content: 'Not done.' }] });
    const mention = fake.say(fake.general, 'wipe it', { mention: true });
    const thread = await fake.waitFor(() => fake.channels.get(mention.id), 10_000, 'the thread');
    const card = await rig.botMessage(thread.id, (message) => message.content.startsWith('✋ Hippo wants to run `shell`'), 'the approval card');
    const deny = fake.click(card, buttonsOf(card).find((button) => button.label === 'Deny')!.customId);
    expect(await answerTo(deny.token)).toMatch(/^🚫 Denied by Ada Lovelace/);
    await rig.botMessage(thread.id, (message) => message.content === 'Not done.', 'the answer');
    expect(ran).toEqual([]);
    const result = conversation(requestsOf(rig.model.requests, 'worker').at(-1)!.body).find((message) => message['role'] === 'tool');
    expect(result?.['content']).toContain('not run: Ada Lovelace denied this call');
  });
});
