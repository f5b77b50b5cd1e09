// The service as it ships: `npm start`'s command (src/main.ts under tsx, with its node options), as
// a child process with nothing of the test runner loaded into it, against the fake Discord, the fake
// Slack and the fake model server. What the in-process rigs cannot show shows here: which modules
// load first, and what they change process-wide (an HTTP library's global dispatcher took
// Discord's uploads on Node 20 while every in-process test stayed green). It runs on the Node
// running the tests and on every other binary named in HIPPO_TEST_NODES (colon-separated; .ci/run
// names Node 24, the LTS we ship). It runs from a copy holding only what a production install keeps
// (production-copy.ts: no Prisma CLI, Studio or TypeScript), started by the image's own command.
import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '../fakes/fake-discord.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { signedHeaders, startFakeSlackApi, type FakeSlackApi, markdownOf } from '../fakes/fake-slack-api.js';
import { createEmptyDatabase } from '../support/database.js';
import { conversation, scriptRoles } from '../support/model-script.js';
import { productionNodeOptions, startScript, type RunningProcess } from '../support/processes.js';
import { productionCopy } from '../support/production-copy.js';
import { until } from '../support/wait.js';

const nodes = [process.execPath, ...(process.env['HIPPO_TEST_NODES'] ?? '').split(':').filter((path) => path !== '')];
let production = '';

beforeAll(() => {
  production = productionCopy();
});
afterAll(() => rm(production, { recursive: true, force: true }));

describe('a production install', () => {
  it('leaves out the Prisma CLI, Prisma Studio and TypeScript, and keeps what the service loads', () => {
    const resolve = createRequire(join(production, 'package.json')).resolve;
    for (const devTool of ['prisma', 'typescript', '@prisma/studio-core', 'vitest']) expect(() => resolve(devTool), devTool).toThrow(/Cannot find module/);
    for (const runtime of ['@prisma/client', '@prisma/adapter-pg', 'tsx', 'sharp', '@electric-sql/pglite']) expect(resolve(runtime)).toContain(production);
  });
});

describe.each(nodes.map((node) => ({ node, version: execFileSync(node, ['--version'], { encoding: 'utf8' }).trim() })))('the shipped service on Node $version', ({ node }) => {
  let database: Awaited<ReturnType<typeof createEmptyDatabase>>;
  let fake: FakeDiscord;
  let slack: FakeSlackApi;
  let model: FakeModelServer;
  let service: RunningProcess;
  let port = 0;
  const signingSecret = 'ship-mode-secret';
  let environment: Record<string, string> = {};
  let drills = 0;

  /** Starts the service as the image's CMD does, from the production copy. */
  async function start(): Promise<void> {
    service = startScript('src/main.ts', environment, [], { node, nodeOptions: productionNodeOptions(), root: production });
    port = Number((await service.waitForLog(/^service-started$/, 60_000))['port']);
  }

  /** Posts a signed Slack mention to the service. */
  async function mention(root: string, text: string): Promise<void> {
    const event = { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts: root, channel: 'C0SHIP', event_ts: root };
    const body = JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${root.replace('.', '')}`, event });
    const response = await fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(signingSecret, body) }, body });
    expect(response.status).toBe(200);
  }

  beforeAll(async () => {
    database = await createEmptyDatabase();
    fake = await startFakeDiscord();
    slack = await startFakeSlackApi({ threadStatusError: null });
    slack.addUser({ id: 'UADA', displayName: 'Ada' });
    model = await startFakeModelServer();
    // A person's message gets a file written and attached (an upload); the tool results get the
    // answer, streamed in small chunks (the fake's default).
    scriptRoles(model, {
      // The restart drill: the first call hangs until the process is killed, the next one answers.
      worker: (body, index) => JSON.stringify(conversation(body).at(-1)).includes('restart drill')
        ? (drills++ === 0 ? { hang: true } : { content: 'Back after the restart.' })
        : (conversation(body).at(-1)?.['role'] === 'tool'
        ? { content: 'Here is the plan, written out step by step for the team to read.' }
        : { toolCalls: [{ id: `w${index}`, name: 'write_file', arguments: { path: 'plan.txt', content: 'step 1\nstep 2\n' } }, { id: `a${index}`, name: 'attach_file', arguments: { path: 'plan.txt' } }] }),
    });
    environment = {
      DATABASE_URL: database.url, PORT: '0', DISCORD_BOT_TOKEN: 'fake-bot-token', DISCORD_API_URL: fake.apiUrl,
      SLACK_BOT_TOKEN: 'xoxb-ship-mode', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: slack.apiUrl,
      OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: model.url, MODEL: 'test-model', TOOLS: 'memory,workspace',
      DATA_DIR: `/tmp/hippo-ship-${process.pid}-${database.name}`,
      // A killed process's sessions are taken over this soon after (the restart drill).
      LEASE_TTL_SECONDS: '3',
    };
    await start();
  }, 90_000);

  afterAll(async () => {
    service?.kill('SIGKILL');
    await service?.exited;
    await fake?.close();
    await slack?.close();
    await model?.close();
    await database?.drop();
  });

  it('answers a Discord mention with the file it made, and uploads `memory export` as a zip', async () => {
    const mention = fake.say(fake.general, 'write the plan', { mention: true });
    const uploads = (channelId: string) => fake.callsTo('POST', new RegExp(`^/channels/${channelId}/messages$`)).filter((call) => call.files.length > 0);
    const answer = await fake.waitFor(() => uploads(mention.id)[0], 30_000, 'the answer with its file');
    expect(answer.files.map((file) => [file.name, file.content])).toEqual([['plan.txt', 'step 1\nstep 2\n']]);
    const thread = fake.channels.get(mention.id)!;
    const asked = fake.say(thread, 'memory export', { mention: true });
    const exported = await fake.waitFor(() => uploads(thread.id).find((call) => call.files.some((file) => file.name.endsWith('.zip'))), 30_000, 'the export');
    expect(exported.json).toMatchObject({ message_reference: { message_id: asked.id } });
    expect(exported.files[0]?.content.startsWith('PK')).toBe(true);
    expect(service.lines.filter((line) => line.includes('discord-message-failed'))).toEqual([]);
  }, 90_000);

  it('answers a Slack mention in a stream, with the file it made uploaded to the thread', async () => {
    const root = '1760000001.000100';
    await mention(root, 'write the plan');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root, 30_000);
    await slack.waitForCall('chat.stopStream', (call) => call.args['ts'] === started.response?.['ts'], 30_000);
    await slack.waitForCall('files.completeUploadExternal', (call) => call.args['thread_ts'] === root, 30_000);
    expect(slack.files.uploads.filter((upload) => upload.threadTs === root).map((upload) => [upload.title, upload.content.toString('utf8')])).toEqual([['plan.txt', 'step 1\nstep 2\n']]);
  }, 90_000);

  it('finishes a run after a restart in the middle of it (the process killed while the model answers)', async () => {
    const root = '1760000002.000100';
    await mention(root, 'restart drill');
    await model.waitFor((request) => request.rawBody.includes('restart drill'), { timeoutMs: 30_000 });
    service.kill('SIGKILL');
    await service.exited;
    await start();
    // The new process takes the session over once the dead one's lease expires, and runs it again.
    const thread = () => slack.threadMessages('C0SHIP', root).map((message) => `${markdownOf(message) ?? ''} ${message.text ?? ''}`).join('\n');
    await until(() => thread().includes('Back after the restart.'), 60_000, 'the answer after the restart');
    expect(drills).toBe(2);
  }, 120_000);
});
