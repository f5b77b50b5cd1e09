// Images people share are bounded (issue #25, item 1): one 4 MiB image shared ten times per
// message, message after message, and a restart on the same database: the real service under
// `npm start`'s heap limit stays up and answers, and no request carries the image more than once.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signedHeaders } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { useServiceFakes } from '../support/service-fakes.js';
import { productionNodeOptions, startScript, type RunningProcess } from '../support/processes.js';
import { until } from '../support/wait.js';
import { noiseJpeg } from '../support/images.js';
import { formatSize } from '../../src/core/format-size.js';

const signingSecret = 'images-secret';
const channel = 'C0IMAGES';
const MiB = 1024 * 1024;
const fakes = useServiceFakes();


/** What one model request carried; its body is dropped at once (they are large). */
interface Seen { role: string; chars: number; images: number }

async function service(env: Record<string, string>): Promise<{ process: RunningProcess; port: number }> {
  const process = startScript('src/main.ts', env, [], { nodeOptions: productionNodeOptions() });
  const started = await process.waitForLog(/^service-started/, 30_000);
  return { process, port: Number(started['port']) };
}

describe('one image shared again and again', () => {
  it('keeps the service up under its production heap limit, across a restart, with every request showing it once', async () => {
    expect(productionNodeOptions()).toEqual([expect.stringMatching(/^--max-old-space-size=\d+$/)]);
    const seen: Seen[] = [];
    fakes.model.respond((body, { request }): FakeReply => {
      const role = roleOf(body);
      const images = body.messages.flatMap((message) => (Array.isArray(message['content']) ? (message['content'] as Array<{ type: string }>) : [])).filter((part) => part.type === 'image_url').length;
      seen.push({ role, chars: request.rawBody.length, images });
      const last = JSON.stringify(body.messages.at(-1)?.['content'] ?? '');
      request.rawBody = '';
      request.body = { messages: [] };
      if (role !== 'worker') return { content: 'KEEP_CONTEXT' };
      const asked = /message (\d+)/.exec(last)?.[1];
      return { content: `Answer to message ${asked ?? '?'}.`, usage: { promptTokens: 3_000, cachedTokens: 0, completionTokens: 5 } };
    });
    const env = {
      DATABASE_URL: fakes.database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-images-')), PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fakes.model.url,
      // A window where one image stays below R2's first step: no memory forks, a faster test.
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', MODEL_IMAGES: 'true', FILE_MAX_MB: '6', TOOLS: 'memory', LEASE_TTL_SECONDS: '2',
      SLACK_BOT_TOKEN: 'xoxb-images-test', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: fakes.slack.apiUrl,
    };
    // One 4 MiB phone photo (a real JPEG: R22 shows only images that decode), shared as ten files per message.
    const image = await noiseJpeg();
    const root = '1760000001.000100';
    const post = async (port: number, index: number) => {
      const files = Array.from({ length: 10 }, () => fakes.slack.files.add({ name: 'photo.jpg', mimetype: 'image/jpeg', content: image }));
      const ts = index === 1 ? root : `17600000${String(index).padStart(2, '0')}.000200`;
      const event = { type: 'app_mention', user: 'UADA', text: `<@${fakes.slack.botUserId}> look at the chart (message ${index})`, ts, thread_ts: root, channel, event_ts: ts, files };
      const body = JSON.stringify({ team_id: fakes.slack.teamId, type: 'event_callback', event_id: `EvImage${index}`, event });
      const response = await fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(signingSecret, body) }, body });
      expect(response.status).toBe(200);
    };
    const answered = (index: number) => until(
      async () => (await fakes.database.prisma.contextMessage.count({ where: { role: 'assistant', content: { contains: `Answer to message ${index}.` } } })) > 0,
      45_000, `the answer to message ${index}`,
    );
    // Each request shows the image at most once: a few MB, not ten copies per message.
    const bounded = () => {
      expect(seen.length).toBeGreaterThan(0);
      expect(Math.max(...seen.map((request) => request.images))).toBe(1);
      expect(Math.max(...seen.map((request) => request.chars))).toBeLessThan(8 * MiB);
    };

    const first = await service(env);
    for (const index of [1, 2]) {
      await post(first.port, index);
      await answered(index);
      bounded();
    }
    // A message is waiting when the process dies: the next one rebuilds the context and answers it.
    await post(first.port, 3);
    await until(async () => (await fakes.database.prisma.steerMessage.count({ where: { text: { contains: 'message 3' } } })) === 1, 10_000, 'message 3 stored');
    first.process.kill('SIGKILL');
    await first.process.exited;

    const second = await service(env);
    try {
      await answered(3);
      await post(second.port, 4);
      await answered(4);
      bounded();
      expect(second.process.child.exitCode).toBeNull();
      expect(second.process.stderr()).not.toMatch(/heap/i);
      const lines = await fakes.database.prisma.contextMessage.findMany({ where: { role: 'user', content: { contains: 'message 4' } } });
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line.content).toContain(`(attached: photo.jpg, image/jpeg, ${formatSize(image.length)}, saved as files/photo.jpg; the same image as one shown earlier)`);
    } finally {
      second.process.kill('SIGTERM');
      await second.process.exited;
    }
  }, 180_000);
});
