// R22 (issue #39, item 1): images a provider will not take never wedge a thread. A 4 MiB phone
// photo on the Messages API, a text file with a PNG signature on Chat Completions, and an image
// the provider refuses on its own terms: each is shared in a thread followed by more messages,
// through the real SDK clients against fakes that refuse what the real APIs refuse.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WORKSPACE_LIMITS } from '../../src/tools/workspace-quota.js';
import { imageLimitsFor } from '../../src/core/image-limits.js';
import type { Attachment, SessionRecord } from '../../src/core/store.js';
import { createLogger } from '../../src/log.js';
import { WorkspaceAttachments } from '../../src/tools/workspace-attachments.js';
import { startFakeAnthropicServer, type FakeAnthropicServer } from '../fakes/fake-anthropic-server.js';
import { startFakeModelServer, type FakeModelServer, type FakeRequestBody, type FakeReply, type RecordedRequest } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { fakePng, flatPng, noiseJpeg } from '../support/images.js';
import { roleOf } from '../support/model-script.js';

let database: TestDatabase;
const files = new Map<string, Buffer>();

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** Saves shared files into a workspace of the test's own; the "platform" is the `files` map. */
async function attachmentsFor(provider: 'anthropic' | 'openai'): Promise<WorkspaceAttachments> {
  const root = path.join(await mkdtemp(path.join(tmpdir(), 'hippo-provider-images-')), 'workspaces');
  const attachments = new WorkspaceAttachments({
    root, limits: DEFAULT_WORKSPACE_LIMITS, maxFileBytes: 20 * 1024 * 1024, images: true, imageLimits: imageLimitsFor(provider, 8), log: createLogger('silent'),
  });
  attachments.register('console', async (attachment) => {
    const bytes = files.get(attachment.ref);
    if (!bytes) throw new Error(`no file ${attachment.ref}`);
    return { bytes };
  });
  return attachments;
}

/** The worker answers "Answer to message N." for the last "message N" it was sent; forks keep the context. */
function answerEachMessage(body: FakeRequestBody): FakeReply {
  const role = roleOf(body);
  if (role === 'decider') return { content: 'Still relevant.\nKEEP_CONTEXT' };
  if (role !== 'worker') return { content: 'Nothing to note.' };
  const asked = [...JSON.stringify(body.messages).matchAll(/message (\d+)/g)].at(-1)?.[1];
  return { content: `Answer to message ${asked ?? '?'}.` };
}

/** Data URLs of every image a request showed (Chat Completions view of either fake). */
function shownImages(body: FakeRequestBody): string[] {
  return body.messages.flatMap((message) => (Array.isArray(message['content']) ? (message['content'] as Array<{ type: string; image_url?: { url: string } }>) : []))
    .flatMap((part) => (part.type === 'image_url' && part.image_url ? [part.image_url.url] : []));
}

function attachment(name: string, bytes: Buffer, mimeType: string): Attachment {
  const ref = `${name}-${files.size}`;
  files.set(ref, bytes);
  return { name, mimeType, size: bytes.length, ref };
}

/** How many answers to message N the worker gave (events: a reset's carried copies are not answers). */
function answers(harness: AgentHarness, session: SessionRecord, index: number): number {
  return harness.events.filter((event) => event.type === 'answer' && event.session.id === session.id && event.text === `Answer to message ${index}.`).length;
}

/** Sends message N (with its files) and waits for its answer. */
async function say(harness: AgentHarness, thread: ReturnType<typeof newThread>, index: number, attachments: Attachment[] = []): Promise<SessionRecord> {
  const { session } = await harness.agent.submit({ ...personMessage(thread, `Here is message ${index}.`), attachments }, { startSession: true });
  if (!session) throw new Error('no session');
  await harness.waitForEvent('answer', (event) => event.session.id === session.id && event.text === `Answer to message ${index}.`, 60_000);
  return session;
}

describe('a 4 MiB phone photo on the Messages API', () => {
  let model: FakeAnthropicServer;
  let harness: AgentHarness;
  beforeAll(async () => {
    model = await startFakeAnthropicServer();
    model.respond(answerEachMessage);
    harness = await createAgentHarness({
      database, model: model as unknown as FakeModelServer, provider: 'anthropic', attachments: await attachmentsFor('anthropic'),
      settings: { model: 'claude-sonnet-4-5', contextWindow: 1_000_000, images: true, imageLimits: imageLimitsFor('anthropic', 8) },
    });
  });
  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it('is shown shrunk to fit, and every later message is answered once, with no refusal', async () => {
    const photo = await noiseJpeg();
    expect(photo.length).toBeGreaterThan(4 * 1024 * 1024);
    const thread = newThread();
    const session = await say(harness, thread, 1, [attachment('IMG_0001.jpg', photo, 'image/jpeg')]);
    for (const index of [2, 3]) await say(harness, thread, index);
    for (const index of [1, 2, 3]) expect(answers(harness, session, index)).toBe(1);
    expect(model.imageRefused).toHaveLength(0);
    // Every worker call showed the photo, within the API's 5 MB of base64.
    const workers = model.requests.filter((request) => roleOf(request.body) === 'worker');
    expect(workers).toHaveLength(3);
    for (const request of workers) {
      const [image] = shownImages(request.body);
      expect(image).toMatch(/^data:image\/jpeg;base64,/);
      expect((image ?? '').length - 'data:image/jpeg;base64,'.length).toBeLessThanOrEqual(5_242_880);
    }
    const line = await database.prisma.contextMessage.findFirst({ where: { role: 'user', content: { contains: 'IMG_0001.jpg' }, segment: { sessionId: session.id } } });
    expect(line?.content).toContain('saved as files/IMG_0001.jpg; shrunk from 4000×3000 to 1568×1176 px to be shown; shown below');
  }, 120_000);
});

describe('a text file with a PNG signature on Chat Completions', () => {
  let model: FakeModelServer;
  let harness: AgentHarness;
  beforeAll(async () => {
    model = await startFakeModelServer();
    model.respond(answerEachMessage);
    harness = await createAgentHarness({ database, model, attachments: await attachmentsFor('openai'), settings: { contextWindow: 1_000_000, images: true } });
  });
  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it('is saved and described, never sent as an image, and every message is answered', async () => {
    const thread = newThread();
    const session = await say(harness, thread, 1, [attachment('chart.png', fakePng(), 'image/png')]);
    await say(harness, thread, 2);
    for (const index of [1, 2]) expect(answers(harness, session, index)).toBe(1);
    expect(model.imageRefused).toHaveLength(0);
    expect(model.requests.flatMap((request) => shownImages(request.body))).toEqual([]);
    const line = await database.prisma.contextMessage.findFirst({ where: { role: 'user', content: { contains: 'chart.png' }, segment: { sessionId: session.id } } });
    expect(line?.content).toContain('saved as files/chart.png; its bytes are not a valid PNG image)');
  }, 60_000);
});

/** An image the provider refuses although it fits every documented limit: only the refusal tells. */
describe.each(['anthropic', 'openai'] as const)('an image the provider refuses on its own terms (%s)', (provider) => {
  let model: FakeAnthropicServer | FakeModelServer;
  let harness: AgentHarness;
  let refused: Buffer;
  beforeAll(async () => {
    refused = await flatPng(64, 64, { r: 1, g: 2, b: 3 });
    const refuseImage = (bytes: Buffer) => bytes.equals(refused);
    model = provider === 'anthropic' ? await startFakeAnthropicServer({ refuseImage }) : await startFakeModelServer({ refuseImage });
    model.respond(answerEachMessage);
    harness = await createAgentHarness({
      database, model: model as FakeModelServer, provider, attachments: await attachmentsFor(provider),
      settings: { model: provider === 'anthropic' ? 'claude-sonnet-4-5' : 'test-model', contextWindow: 1_000_000, images: true, imageLimits: imageLimitsFor(provider, 8) },
    });
  });
  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it('is replaced by a note after one refusal, the call is tried once more, and it is never sent again, also after a reset', async () => {
    const fine = await flatPng(32, 32, { r: 9, g: 9, b: 9 });
    const good = `data:image/png;base64,${fine.toString('base64')}`;
    const thread = newThread();
    const session = await say(harness, thread, 1, [attachment('scan.png', refused, 'image/png'), attachment('ok.png', fine, 'image/png')]);
    expect(model.imageRefused).toHaveLength(1);
    await say(harness, thread, 2);
    // A person's reset carries the thread over: the image does not come back with it.
    await harness.agent.reset(session.id);
    await harness.waitForEvent('context-reset', (event) => event.session.id === session.id, 30_000);
    await say(harness, thread, 3);
    for (const index of [1, 2, 3]) expect(answers(harness, session, index)).toBe(1);
    expect(model.imageRefused).toHaveLength(1);
    const requests: readonly RecordedRequest[] = model.requests;
    const after = requests.slice(requests.indexOf(model.imageRefused[0]!) + 1);
    expect(after.length).toBeGreaterThan(2);
    // Anthropic names the refused block: the other image is still shown. OpenAI names none: every
    // image of the refused request is dropped.
    for (const request of after) expect(shownImages(request.body)).toEqual(provider === 'anthropic' ? [good] : []);
    const stored = await database.prisma.contextMessage.findMany({ where: { role: 'user', content: { contains: 'scan.png' }, segment: { sessionId: session.id } } });
    expect(stored.length).toBeGreaterThanOrEqual(2);
    for (const row of stored) {
      expect(row.content).not.toContain(refused.toString('base64'));
      expect(row.content).toContain('saved as files/scan.png; refused by the model provider)');
      expect(row.content).toContain('(An image the model provider refused (400 ');
      expect(row.content).toContain('It is saved in the workspace as files/scan.png.)');
    }
  }, 120_000);
});
