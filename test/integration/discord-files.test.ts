// Files in Discord (docs/product.md "Share files"): attachments (served by the fake's CDN) reach the session
// workspace and the model (images as image parts); a file the agent attaches is uploaded once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { threadAddress } from '../../src/adapters/discord/ids.js';
import { startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import { requestsOf, scriptRoles } from '../support/model-script.js';

/** A 1×1 PNG. */
const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
let rig: DiscordRig;

beforeAll(async () => {
  rig = await startDiscordRig({ images: true, withFileTools: true });
});
afterAll(async () => {
  await rig?.close();
});
afterEach(async () => {
  await rig.quiet();
  rig.model.reset();
});

describe('Discord attachments', () => {
  it('saves a mention\'s attachments and shows the image to the model; a reply with only a file steers too', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, { worker: [{ content: 'Looked at both.' }, { content: 'Got the log.' }] });
    const mention = fake.say(fake.general, 'check these', { mention: true, files: [{ name: 'graph.png', contentType: 'image/png', content: png }, { name: 'notes.md', contentType: 'text/markdown', content: Buffer.from('# Notes\n') }] });
    await rig.botMessage(mention.id, (message) => message.content === 'Looked at both.');
    const first = requestsOf(rig.model.requests, 'worker')[0]!;
    expect(first.body.messages.at(-1)?.['content']).toEqual([
      { type: 'text', text: 'Ada Lovelace wrote:\n> check these\n(attached: graph.png, image/png, 70 B, saved as files/graph.png; shown below)\n(attached: notes.md, 8 B, saved as files/notes.md)' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
    ]);
    expect(fake.cdnFetches).toHaveLength(2);
    const session = (await rig.harness.agent.findSession(threadAddress(fake.guildId, fake.general.id, mention.id)))!;
    expect(await readFile(path.join(rig.attachments.workspaceOf(session.id), 'files', 'notes.md'), 'utf8')).toBe('# Notes\n');

    const thread = fake.channels.get(mention.id)!;
    fake.say(thread, '', { files: [{ name: 'server.log', contentType: 'text/plain', content: Buffer.from('error at 12:00\n') }] });
    await rig.botMessage(thread.id, (message) => message.content === 'Got the log.');
    const second = requestsOf(rig.model.requests, 'worker')[1]!;
    expect(second.body.messages.at(-1)?.['content']).toBe('Ada Lovelace wrote:\n> (shared a file)\n(attached: server.log, 15 B, saved as files/server.log)');
  });

  it('uploads a file the agent attaches as a message attachment after the answer', async () => {
    const { fake } = rig;
    scriptRoles(rig.model, {
      worker: [
        { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'plan.txt', content: 'step 1\nstep 2\n' } }, { id: 'a1', name: 'attach_file', arguments: { path: 'plan.txt' } }] },
        { content: 'The plan is attached.' },
      ],
    });
    const mention = fake.say(fake.general, 'write the plan to a file', { mention: true });
    await rig.botMessage(mention.id, (message) => message.content === 'The plan is attached.');
    const upload = await fake.waitFor(() => fake.callsTo('POST', new RegExp(`^/channels/${mention.id}/messages$`)).find((call) => call.files.length > 0), 10_000, 'the upload');
    expect(upload.files).toEqual([{ name: 'plan.txt', content: 'step 1\nstep 2\n' }]);
    expect(upload.body?.['nonce']).toEqual(expect.any(String));
    await rig.adapter.idle();
    expect(fake.callsTo('POST', new RegExp(`^/channels/${mention.id}/messages$`)).filter((call) => call.files.length > 0)).toHaveLength(1);
  });
});
