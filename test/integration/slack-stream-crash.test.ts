// A streamed answer across a crash (R17): the service is SIGKILLed while the answer streams into
// Slack; the next process answers the same position and its answer replaces the streamed message.
// One message carries the answer; nothing is posted twice.
// Not on test/support/slack-rig.ts: the rig runs the adapter in this process, and these tests
// SIGKILL the service, so they start `src/main.ts` as child processes against the fake servers.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signedHeaders, markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { useServiceFakes } from '../support/service-fakes.js';
import { startScript, type RunningProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

const signingSecret = 'crash-secret';
const channel = 'C0CRASH';
const fakes = useServiceFakes();


/** The environment of one test's service processes (a data dir of their own). */
async function serviceEnv(): Promise<Record<string, string>> {
  return {
    DATABASE_URL: fakes.database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-stream-crash-')), PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fakes.model.url,
    MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory', LEASE_TTL_SECONDS: '2',
    SLACK_BOT_TOKEN: 'xoxb-crash-test', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: fakes.slack.apiUrl,
  };
}

/** Posts a signed mention to the service on `port`, which starts a thread at `root`. */
async function mention(port: number, text: string, root: string, eventId: string): Promise<void> {
  const event = { type: 'app_mention', user: 'UADA', text: `<@${fakes.slack.botUserId}> ${text}`, ts: root, channel, event_ts: root };
  const body = JSON.stringify({ team_id: fakes.slack.teamId, type: 'event_callback', event_id: eventId, event });
  const response = await fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(signingSecret, body) }, body });
  expect(response.status).toBe(200);
}

/** Starts the service and returns it with its HTTP port. */
async function service(env: Record<string, string>): Promise<{ process: RunningProcess; port: number }> {
  const process = startScript('src/main.ts', env);
  const started = await process.waitForLog(/^service-started/, 30_000);
  return { process, port: Number(started['port']) };
}

describe('a streamed answer when the service is killed mid-stream', () => {
  it('is answered by the next process in the same message: the stream becomes the answer, posted once', async () => {
    const env = await serviceEnv();
    const slow = Array.from({ length: 40 }, (_unused, index) => `Part ${index + 1} of an answer that takes a while.`).join(' ');
    const final = 'The answer, given after the restart.';
    let attempts = 0;
    fakes.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      attempts += 1;
      // The first process streams for ~10 s (it is killed meanwhile); the second answers at once.
      return attempts === 1 ? { content: slow, chunkDelayMs: 60, usage: null } : { content: final, usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 9 } };
    });
    const first = await service(env);
    const root = '1730000001.000100';
    await mention(first.port, 'tell me slowly', root, 'EvCrash1');

    const started = await fakes.slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root, 20_000);
    const streamTs = String(started.response?.['ts']);
    await fakes.slack.waitForCall('chat.appendStream', (call) => call.args['ts'] === streamTs, 10_000);
    // Between two writes (a second apart), so no outbox item is half-sent when it dies.
    await new Promise((resolve) => setTimeout(resolve, 300));
    first.process.kill('SIGKILL');
    await first.process.exited;
    const streamed = fakes.slack.messages.find((message) => message.ts === streamTs)!;
    expect(streamed.streaming).toBe(true);
    expect(slow.startsWith(markdownOf(streamed) ?? '')).toBe(true);

    const second = await service(env);
    try {
      await until(() => markdownOf(streamed) === final && streamed.streaming === false, 30_000, 'the stream replaced by the answer');
      const session = await fakes.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
      await until(async () => (await fakes.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 10_000, 'the outbox drained');
      // One message carries the answer (cards aside); it was never posted anew.
      const replies = fakes.slack.threadMessages(channel, root).filter((message) => markdownOf(message) !== undefined);
      expect(replies.map((message) => message.ts)).toEqual([streamTs]);
      expect(fakes.slack.callsTo('chat.postMessage').filter((call) => String(markdownOf(call.args) ?? call.args['text'] ?? '').includes(final))).toHaveLength(0);
      const answerItem = await fakes.database.prisma.outboxItem.findFirstOrThrow({ where: { sessionId: session.id, idempotencyKey: { startsWith: 'answer:' } } });
      expect(answerItem).toMatchObject({ status: 'sent', platformMessageId: streamTs, targetKey: expect.stringMatching(/^stream:/) });
      expect(attempts).toBe(2);
    } finally {
      second.process.kill('SIGTERM');
      await second.process.exited;
    }
  }, 90_000);

  it('shows each tool call once across the crash: one task stream for the run, no card twice, the answer once (R17)', async () => {
    const env = await serviceEnv();
    const slow = Array.from({ length: 40 }, (_unused, index) => `Step ${index + 1} of what the search found.`).join(' ');
    let answers = 0;
    fakes.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      const usage = { promptTokens: 200, cachedTokens: 0, completionTokens: 9 };
      if (!body.messages.some((message) => message['role'] === 'tool')) return { toolCalls: [{ name: 'memory_search', arguments: { query: 'the plan' } }], usage };
      answers += 1;
      // After its tool call the first process receives the answer for ~10 s (it is killed meanwhile).
      return answers === 1 ? { content: slow, chunkDelayMs: 60, usage: null } : { content: 'Found it.', usage };
    });
    const first = await service(env);
    const root = '1730000002.000100';
    await mention(first.port, 'search then tell me', root, 'EvCrash2');

    // After a tool call the answer is not streamed on its own: it will end the run's task stream.
    await fakes.slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root && call.args['task_display_mode'] !== undefined, 20_000);
    await fakes.model.waitFor((request) => roleOf(request.body) === 'worker' && request.body.messages.some((message) => message['role'] === 'tool'), { timeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    first.process.kill('SIGKILL');
    await first.process.exited;

    const second = await service(env);
    try {
      const answered = () => fakes.slack.threadMessages(channel, root).filter((message) => (markdownOf(message) ?? '').includes('Found it.'));
      await until(() => answered().length > 0, 30_000, 'the answer');
      const session = await fakes.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
      await until(async () => (await fakes.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 10_000, 'the outbox drained');
      const taskStreams = fakes.slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root && call.args['task_display_mode'] !== undefined);
      expect(taskStreams).toHaveLength(1);
      // Every task card chunk went to that one stream, and the search shows as one card (one id).
      const taskTs = String(taskStreams[0]?.response?.['ts']);
      const chunked = fakes.slack.calls.filter((call) => Array.isArray(call.args['chunks']) && (call.args['thread_ts'] === root || call.args['ts'] === taskTs));
      expect(chunked.every((call) => call === taskStreams[0] || call.args['ts'] === taskTs)).toBe(true);
      const ids = chunked.flatMap((call) => call.args['chunks'] as Array<Record<string, unknown>>).map((chunk) => chunk['id']);
      expect(new Set(ids).size).toBe(1);
      expect(answers).toBe(2);
      // The answer shows once; nothing of the answer the first process was receiving reached the thread.
      expect(answered()).toHaveLength(1);
      expect(fakes.slack.threadMessages(channel, root).some((message) => (markdownOf(message) ?? '').includes('Step 1 of'))).toBe(false);
    } finally {
      second.process.kill('SIGTERM');
      await second.process.exited;
    }
  }, 90_000);
});
