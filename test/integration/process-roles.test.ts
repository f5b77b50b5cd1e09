// HIPPO_ROLE (docs/operations.md "Process roles"): an ingest process receives, stores and acks
// Slack's events and never drives a session; a worker process drives sessions and serves no Slack
// endpoint. Two real `npm start` processes on one Postgres, the fake Slack and the fake model:
// a mention is answered end to end, and a SIGKILL of either process loses nothing.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signedHeaders, markdownOf } from '../fakes/fake-slack-api.js';
import type { FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { useServiceFakes } from '../support/service-fakes.js';
import { startScript, type RunningProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

const signingSecret = 'roles-secret';
const channel = 'C0ROLES';
const fakes = useServiceFakes();
const running: RunningProcess[] = [];

afterAll(async () => {
  for (const process of running) {
    process.kill('SIGKILL');
    await process.exited;
  }
});

/** Starts `npm start` in `role` and returns it with its HTTP port (sweeps every third of the lease TTL). */
async function start(role: 'ingest' | 'worker', leaseTtlSeconds = 2): Promise<{ process: RunningProcess; port: number }> {
  const process = startScript('src/main.ts', {
    DATABASE_URL: fakes.database.url, DATA_DIR: await mkdtemp(join(tmpdir(), `hippo-${role}-`)), PORT: '0', HIPPO_ROLE: role,
    OPENAI_API_KEY: 'k', OPENAI_BASE_URL: fakes.model.url, MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory',
    LEASE_TTL_SECONDS: String(leaseTtlSeconds), SLACK_BOT_TOKEN: 'xoxb-roles-test', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: fakes.slack.apiUrl,
  });
  running.push(process);
  const started = await process.waitForLog(/^service-started/, 30_000);
  expect(started['role']).toBe(role);
  return { process, port: Number(started['port']) };
}

/** Posts a signed message event; `root` is the thread (the mention's own ts for a new thread). */
async function post(port: number, event: Record<string, unknown>, eventId: string): Promise<Response> {
  const body = JSON.stringify({ team_id: fakes.slack.teamId, type: 'event_callback', event_id: eventId, event: { channel, user: 'UADA', ...event } });
  return fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(signingSecret, body) }, body });
}

function mention(port: number, text: string, root: string, eventId: string): Promise<Response> {
  return post(port, { type: 'app_mention', text: `<@${fakes.slack.botUserId}> ${text}`, ts: root, event_ts: root }, eventId);
}

/** The thread's messages that carry `text` as a finished answer. */
function answers(root: string, text: string) {
  return fakes.slack.threadMessages(channel, root).filter((message) => message.streaming !== true && (markdownOf(message) ?? message.text ?? '').includes(text));
}

async function leaseOwner(root: string): Promise<string | undefined> {
  const session = await fakes.database.prisma.session.findFirst({ where: { threadKey: root } });
  if (!session) return undefined;
  return (await fakes.database.prisma.sessionLease.findUnique({ where: { sessionId: session.id } }))?.owner;
}

async function metrics(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

async function stop(process: RunningProcess): Promise<void> {
  process.kill('SIGTERM');
  await process.exited;
}

describe('process roles on one Postgres', () => {
  it('answers a mention and a reply in its thread: the ingest acks and stores, the worker drives and answers', async () => {
    fakes.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      const said = JSON.stringify(body.messages.at(-1));
      return { content: said.includes('and the second') ? 'Second answer.' : 'First answer.', usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 3 } };
    });
    // Sweeps 10 s apart: the worker must take the session up on the ingest's wake-up, not by a sweep.
    const ingest = await start('ingest', 30);
    const worker = await start('worker', 30);
    try {
      // Recovery at start-up found nothing to drive: what follows reaches the worker as a wake-up.
      expect((await worker.process.waitForLog(/^sessions-recovered$/, 10_000))['sessions']).toBe(0);
      // The worker serves no Slack endpoint: Slack's requests go to the ingest process.
      expect((await mention(worker.port, 'wrong door', '1730000100.000001', 'EvRolesX')).status).toBe(404);
      const root = '1730000100.000100';
      expect((await mention(ingest.port, 'first question', root, 'EvRoles1')).status).toBe(200);
      await until(() => answers(root, 'First answer.').length === 1, 30_000, 'the first answer in the thread');
      expect(await leaseOwner(root)).toContain(`:${String(worker.process.child.pid)}:`);
      expect((await post(ingest.port, { type: 'message', text: 'and the second', ts: '1730000100.000200', thread_ts: root }, 'EvRoles2')).status).toBe(200);
      await until(() => answers(root, 'Second answer.').length === 1, 30_000, 'the second answer in the thread');
      // The worker ran both turns and took both steers; the ingest received them and ran nothing.
      const [ingestMetrics, workerMetrics] = await Promise.all([metrics(ingest.port), metrics(worker.port)]);
      expect(ingestMetrics).toMatch(/^hippo_steer_messages_total 2$/m);
      expect(ingestMetrics).not.toMatch(/^hippo_(runs_total|model_calls_total|steers_taken_total)\b.* [1-9]/m);
      expect(workerMetrics).toMatch(/^hippo_steers_taken_total 2$/m);
      expect(workerMetrics).toMatch(/^hippo_model_calls_total\{role="worker",outcome="ok"\} 2$/m);
      expect(answers(root, 'First answer.')).toHaveLength(1);
      expect(worker.process.lines.join('\n')).not.toContain('sessions-swept');
      // A command the ingest receives once the worker gave the idle session's lease up: the ingest
      // stores it, the worker carries it out (the ingest never takes the lease, even a free one).
      const session = await fakes.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
      await until(async () => (await fakes.database.prisma.sessionLease.findUnique({ where: { sessionId: session.id } }))?.released === true, 20_000, 'the idle lease given up');
      const command = { type: 'app_mention', text: `<@${fakes.slack.botUserId}> reset`, ts: '1730000100.000300', thread_ts: root };
      expect((await post(ingest.port, command, 'EvRoles5')).status).toBe(200);
      await until(async () => (await fakes.database.prisma.segment.count({ where: { sessionId: session.id } })) === 2, 30_000, 'the reset carried out');
      expect(await leaseOwner(root)).toContain(`:${String(worker.process.child.pid)}:`);
    } finally {
      await stop(worker.process);
      await stop(ingest.process);
    }
  }, 120_000);

  it('carries out a remember said to the ingest once, with its note, also when the worker is killed during its run', async () => {
    let requestedRuns = 0;
    fakes.model.respond((body): FakeReply => {
      const role = roleOf(body);
      if (role === 'decider') return { content: 'KEEP_CONTEXT' };
      if (role === 'worker') return { content: 'Hello there.', usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 3 } };
      const instruction = String(body.messages.findLast((message) => String(message['content']).startsWith('<role-change role="summarizer"'))?.['content'] ?? '');
      if (!instruction.includes('<person-request kind="remember">')) return { content: 'no change' };
      if (body.messages.at(-1)?.['role'] === 'user') requestedRuns += 1;
      // The first worker's requested run is still thinking when that worker is killed.
      return requestedRuns === 1 ? { content: 'never delivered', delayMs: 60_000 } : { content: 'Noted the deploy window, as Ada asked.' };
    });
    const ingest = await start('ingest');
    const first = await start('worker');
    let second: Awaited<ReturnType<typeof start>> | undefined;
    const root = '1730000150.000100';
    try {
      expect((await mention(ingest.port, 'hello', root, 'EvRolesM1')).status).toBe(200);
      await until(() => answers(root, 'Hello there.').length === 1, 30_000, 'the answer');
      const command = { type: 'app_mention', text: `<@${fakes.slack.botUserId}> remember the deploy window is Tuesday`, ts: '1730000150.000200', thread_ts: root };
      expect((await post(ingest.port, command, 'EvRolesM2')).status).toBe(200);
      await until(() => requestedRuns === 1, 30_000, 'the requested run on the first worker');
      first.process.kill('SIGKILL');
      await first.process.exited;
      second = await start('worker');
      const notes = () => answers(root, 'asked to remember');
      await until(() => notes().length === 1, 60_000, 'the note from the second worker');
      expect(markdownOf(notes()[0]) ?? notes()[0]?.text).toContain('Noted the deploy window, as Ada asked.');
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // several sweeps: nothing more comes
      expect(notes()).toHaveLength(1);
      expect(requestedRuns).toBe(2);
      expect(answers(root, 'never delivered')).toHaveLength(0);
    } finally {
      first.process.kill('SIGKILL');
      await first.process.exited;
      if (second) await stop(second.process);
      await stop(ingest.process);
    }
  }, 150_000);

  it('drives a failed session again on a message and on a resume said to the ingest, and no sweep re-drives the failure', async () => {
    let workerCalls = 0;
    let resumed = false;
    const answer = (content: string): FakeReply => ({ content, usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 3 } });
    fakes.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      workerCalls += 1;
      const said = JSON.stringify(body.messages.at(-1));
      // Refused for good (a 400) unless the person's latest words ask for an answer.
      if (said.includes('try again')) return answer('Answered on the message.');
      if (said.includes('and this too')) return answer('Answered the late message.');
      if (said.includes('fail slowly')) return { status: 400, delayMs: 2_000 };
      if (said.includes('break') && resumed) return answer('Answered on the resume.');
      return { status: 400 };
    });
    // Sweeps every two thirds of a second: a failure that sweeps re-drove would call the model again and again.
    const ingest = await start('ingest');
    const worker = await start('worker');
    const root = '1730000170.000100';
    const reply = (text: string, ts: string, eventId: string) => post(ingest.port, { type: 'message', text, ts, thread_ts: root }, eventId);
    const settled = async (calls: number) => {
      await until(() => workerCalls === calls, 30_000, `worker call ${String(calls)}`);
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // several sweeps
      expect(workerCalls).toBe(calls);
    };
    try {
      expect((await mention(ingest.port, 'first', root, 'EvRolesF1')).status).toBe(200);
      await settled(1);
      // A message after the failure drives it again.
      expect((await reply('try again', '1730000170.000200', 'EvRolesF2')).status).toBe(200);
      await until(() => answers(root, 'Answered on the message.').length === 1, 30_000, 'the answer to the message');
      expect(workerCalls).toBe(2);
      // A message that comes while the drive is failing is taken by the next drive.
      expect((await reply('fail slowly', '1730000170.000300', 'EvRolesF3')).status).toBe(200);
      await until(() => workerCalls === 3, 30_000, 'the slow call');
      expect((await reply('and this too', '1730000170.000400', 'EvRolesF4')).status).toBe(200);
      await until(() => answers(root, 'Answered the late message.').length === 1, 30_000, 'the answer to the late message');
      await settled(4);
      // A resume after a failure drives it again.
      expect((await reply('break', '1730000170.000500', 'EvRolesF5')).status).toBe(200);
      await settled(5);
      resumed = true;
      const command = { type: 'app_mention', text: `<@${fakes.slack.botUserId}> resume`, ts: '1730000170.000600', thread_ts: root };
      expect((await post(ingest.port, command, 'EvRolesF6')).status).toBe(200);
      await until(() => answers(root, 'Answered on the resume.').length === 1, 30_000, 'the answer after the resume');
      await settled(6);
    } finally {
      await stop(worker.process);
      await stop(ingest.process);
    }
  }, 180_000);

  it('loses nothing when the worker is SIGKILLed mid-turn or the ingest right after its ack', async () => {
    let asked = 0;
    fakes.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      asked += 1;
      // The first worker's call hangs (it is killed meanwhile); later calls answer at once.
      return asked === 1 ? { content: 'never delivered', delayMs: 60_000 } : { content: 'Answered after the crash.', usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 5 } };
    });
    const ingest = await start('ingest');
    const first = await start('worker');
    const root = '1730000200.000100';
    expect((await mention(ingest.port, 'a long one', root, 'EvRoles3')).status).toBe(200);
    await until(() => asked >= 1, 60_000, 'the first worker asking the model');
    first.process.kill('SIGKILL');
    await first.process.exited;
    // The ingest dies right after acking a reply: the row is stored, its wake-up may be lost.
    expect((await post(ingest.port, { type: 'message', text: 'also this', ts: '1730000200.000200', thread_ts: root }, 'EvRoles4')).status).toBe(200);
    ingest.process.kill('SIGKILL');
    await ingest.process.exited;
    const second = await start('worker');
    try {
      const session = await fakes.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
      // A killed process may hold the claim of the thread's status post it was sending (under load
      // the kill can land mid-send): the thread's later items wait until that claim lapses (the
      // outbox's 60 s claim lease), so the answer may take a minute; it must still come, once.
      await until(() => answers(root, 'Answered after the crash.').length >= 1, 90_000, 'the answer from the second worker').catch(async (error: unknown) => {
        console.log(JSON.stringify(await fakes.database.prisma.$queryRaw`SELECT id, operation, status, attempts, next_attempt_at, created_at, now() AS now, last_error FROM outbox WHERE session_id = ${session.id} ORDER BY id`, (_k, v: unknown) => typeof v === 'bigint' ? String(v) : v, 1));
        console.log(second.process.lines.slice(-40).join('\n'));
        throw error;
      });
      await until(async () => (await fakes.database.prisma.outboxItem.count({ where: { sessionId: session.id, status: { in: ['pending', 'sending'] } } })) === 0, 20_000, 'the outbox drained');
      // Both messages reached the model, the answer was posted once, and nothing is left queued.
      const lastCall = fakes.model.requests.filter((request) => request.body.prompt_cache_key === session.id).at(-1);
      expect(JSON.stringify(lastCall?.body.messages)).toContain('a long one');
      expect(JSON.stringify(lastCall?.body.messages)).toContain('also this');
      expect(answers(root, 'Answered after the crash.')).toHaveLength(1);
      expect(answers(root, 'never delivered')).toHaveLength(0);
      expect(await fakes.database.prisma.steerMessage.count({ where: { sessionId: session.id, status: 'queued' } })).toBe(0);
    } finally {
      await stop(second.process);
    }
  }, 200_000);
});
