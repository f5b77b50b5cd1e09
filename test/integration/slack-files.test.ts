// Files in Slack (docs/product.md "Share files"): shared files reach the session workspace (downloaded with the
// bot token) and the model's request (images as image parts when the model accepts them, else
// described); a workspace file the agent attaches is uploaded to the thread once.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { webApi } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slackFileFetcher } from '../../src/adapters/slack/files.js';
import { SingleWorkspace } from '../../src/adapters/slack/workspaces/workspaces.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply, RecordedRequest } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'files-secret';
const channel = 'C0FILES';
/** A 1×1 PNG. */
const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
let counter = 0;

async function share(rig: SlackRig, text: string, files: Array<Record<string, unknown>>): Promise<string> {
  counter += 1;
  const ts = `1740000${String(counter).padStart(3, '0')}.000400`;
  const event = { type: 'app_mention', user: 'UADA', text: `<@${rig.slack.botUserId}> ${text}`, ts, channel, event_ts: ts, files };
  const response = await rig.post(JSON.stringify({ team_id: rig.slack.teamId, type: 'event_callback', event_id: `Ev${ts}`, event }), 'application/json');
  expect(response.status).toBe(200);
  return ts;
}

/** The first worker request of a thread's session. */
async function firstRequest(rig: SlackRig, root: string): Promise<RecordedRequest> {
  const session = await until(async () => (await rig.database.prisma.session.count({ where: { threadKey: root } })) === 1, 10_000, 'the session').then(() => rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } }));
  return rig.harness.model.waitFor((request) => request.body.prompt_cache_key === session.id && roleOf(request.body) === 'worker', { timeoutMs: 10_000 });
}

const answerWith = (content: string) => (body: Parameters<typeof roleOf>[0]): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content });

describe('Slack files, for a model that accepts images', () => {
  let rig: SlackRig;
  beforeAll(async () => {
    rig = await startSlackRig({ signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }], settings: { images: true }, maxFileBytes: 1024 * 1024, withFileTools: true });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('saves a shared image and file into the workspace and sends the image to the model as an image part', async () => {
    rig.harness.model.respond(answerWith('Seen both.'));
    const image = rig.slack.files.add({ name: 'screen shot.png', mimetype: 'image/png', content: png });
    const csv = rig.slack.files.add({ name: 'report.csv', mimetype: 'text/csv', content: Buffer.from('a,b\n1,2\n') }, { checkFileInfo: true });
    const big = rig.slack.files.add({ name: 'dump.bin', mimetype: 'application/octet-stream', content: Buffer.alloc(1_500_000, 1) });
    const root = await share(rig, 'have a look', [image, csv, big]);
    const request = await firstRequest(rig, root);
    const last = request.body.messages.at(-1)!;
    expect(last['role']).toBe('user');
    expect(last['content']).toEqual([
      {
        type: 'text',
        text: 'Ada wrote:\n> have a look\n(attached: screen shot.png, image/png, 70 B, saved as files/screen shot.png; shown below)\n'
          + '(attached: report.csv, 8 B, saved as files/report.csv)\n(attached: dump.bin, 1.4 MB, not saved: larger than the 1 MB limit for shared files (FILE_MAX_MB))',
      },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
    ]);
    // Downloaded with the bot token (files.info for the share that came without its URL); the big one not at all.
    expect(rig.slack.callsTo('files.info').map((call) => call.args['file'])).toEqual([csv['id']]);
    expect(rig.slack.files.downloads.map((download) => [download.fileId, download.authorization])).toEqual([
      [image['id'], 'Bearer xoxb-test-token'], [csv['id'], 'Bearer xoxb-test-token'],
    ]);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const workspace = rig.attachments.workspaceOf(session.id);
    expect(await readFile(path.join(workspace, 'files', 'report.csv'), 'utf8')).toBe('a,b\n1,2\n');
    expect((await readFile(path.join(workspace, 'files', 'screen shot.png'))).equals(png)).toBe(true);
    await rig.slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && markdownOf(call.args) === 'Seen both.');
  });

  it('shows the latest 8 of many images and names the files of the others; the same image shared again is only named (#25)', async () => {
    rig.harness.model.respond(answerWith('Seen them.'));
    // Ten different PNGs (their bytes differ after the signature), then the first one again.
    const shots = Array.from({ length: 10 }, (_unused, index) => rig.slack.files.add({ name: `shot-${index + 1}.png`, mimetype: 'image/png', content: Buffer.concat([png, Buffer.from([index])]) }));
    const again = rig.slack.files.add({ name: 'again.png', mimetype: 'image/png', content: Buffer.concat([png, Buffer.from([0])]) });
    const root = await share(rig, 'compare these', [...shots, again]);
    const request = await firstRequest(rig, root);
    const parts = request.body.messages.at(-1)!['content'] as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    const images = parts.filter((part) => part.type === 'image_url');
    expect(images.map((part) => Buffer.from(part.image_url!.url.split(',')[1]!, 'base64').at(-1))).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    const texts = parts.filter((part) => part.type === 'text').map((part) => part.text);
    expect(texts.slice(1)).toEqual([1, 2].map((index) => `(An earlier image is no longer shown, so requests stay within the image limits. It is saved in the workspace as files/shot-${index}.png.)`));
    expect(texts[0]).toContain('(attached: again.png, image/png, 71 B, saved as files/again.png; the same image as one shown earlier)');
    // The run ends before the next test scripts the model: a late call of this session must not take its reply.
    await rig.slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && markdownOf(call.args) === 'Seen them.');
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const runner = await rig.harness.agent.runner(session.id);
    await runner.whenIdle();
    await runner.memory.settle();
  });

  it('uploads a workspace file the agent attaches to its answer, once, after the answer', async () => {
    let step = 0;
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      step += 1;
      if (step === 1) return { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'out/summary.csv', content: 'x,y\n3,4\n' } }, { id: 'a1', name: 'attach_file', arguments: { path: 'out/summary.csv' } }] };
      return { content: 'Here is the summary.' };
    });
    const root = await share(rig, 'summarise into a csv', []);
    // The answer ends the run's task stream (or is posted where Slack refuses streams); the file follows it.
    const carries = (call: { method: string; args: Record<string, unknown> }) => (call.method === 'chat.stopStream' || call.method === 'chat.postMessage') && JSON.stringify(call.args).includes('Here is the summary.');
    await until(() => rig.slack.calls.some(carries), 10_000, 'the answer');
    const answer = rig.slack.calls.find(carries)!;
    const completed = await rig.slack.waitForCall('files.completeUploadExternal', (call) => call.args['thread_ts'] === root);
    expect(completed.args['channel_id']).toBe(channel);
    expect(completed.at).toBeGreaterThanOrEqual(answer.at);
    expect(rig.slack.files.uploads.filter((upload) => upload.threadTs === root).map((upload) => [upload.title, upload.content.toString('utf8')])).toEqual([['summary.csv', 'x,y\n3,4\n']]);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await until(async () => (await rig.database.prisma.outboxItem.findUnique({ where: { idempotencyKey: `upload:${session.id}:a1` } }))?.status === 'sent', 5_000, 'the upload sent');
    expect(rig.slack.callsTo('files.getUploadURLExternal').filter((call) => call.args['filename'] === 'summary.csv')).toHaveLength(1);
  });

  it('sends the bot token to Slack\'s file host only, and refuses a sign-in page as a file', async () => {
    const workspaceWith = (token: string) => new SingleWorkspace({ client: new webApi.WebClient(token, { slackApiUrl: rig.slack.apiUrl }), identity: { teamId: rig.slack.teamId, botUserId: 'UBOT', botId: 'BBOT' } });
    const fetcher = slackFileFetcher(workspaceWith('xoxb-test-token'), rig.slack.apiUrl);
    const signal = new AbortController().signal;
    const workspaceId = rig.slack.teamId;
    await expect(fetcher({ name: 'x', mimeType: null, size: 1, ref: 'F1', url: 'https://evil.example/steal' }, { signal, maxBytes: 1_000, workspaceId })).rejects.toThrow(/refusing to send the bot token/);
    const file = rig.slack.files.add({ name: 'notes.txt', mimetype: 'text/plain', content: Buffer.from('hello') });
    const withoutToken = slackFileFetcher(workspaceWith('not-a-bot-token'), rig.slack.apiUrl);
    await expect(withoutToken({ name: 'notes.txt', mimeType: 'text/plain', size: 5, ref: String(file['id']), url: String(file['url_private']) }, { signal, maxBytes: 1_000, workspaceId })).rejects.toThrow(/web page/);
    expect((await fetcher({ name: 'notes.txt', mimeType: 'text/plain', size: 5, ref: String(file['id']), url: String(file['url_private']) }, { signal, maxBytes: 1_000, workspaceId })).bytes.toString()).toBe('hello');
  });
});

describe('Slack files, for a model that does not accept images', () => {
  let rig: SlackRig;
  beforeAll(async () => {
    rig = await startSlackRig({ signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }], settings: { images: false } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('saves the image and describes it by name, type and size instead of sending it', async () => {
    rig.harness.model.respond(answerWith('Noted.'));
    const image = rig.slack.files.add({ name: 'chart.png', mimetype: 'image/png', content: png });
    const root = await share(rig, 'what does this show?', [image]);
    const request = await firstRequest(rig, root);
    expect(request.body.messages.at(-1)?.['content']).toBe('Ada wrote:\n> what does this show?\n(attached: chart.png, image/png, 70 B, saved as files/chart.png; this model cannot see images)');
    expect(request.rawBody).not.toContain('image_url');
  });
});
