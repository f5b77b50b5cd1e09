// The chaos test, short form (issue "Several replicas", item 5): 3 replica processes on one
// Postgres, SIGKILLed at random every ~3 s and replaced, while Slack delivers mentions and steers
// to whichever replica is up. Scaled down from the 30 sessions / 200 steers so it stays
// well under two minutes on a 2-core runner (every restart costs a replica ~3 s of CPU); the full
// numbers are the long form's defaults: `npx tsx scripts/chaos.ts`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlackMessage } from '../fakes/fake-slack-api.js';
import type { RecordedRequest } from '../fakes/fake-model-server.js';
import { checkChaosRun, type CheckInputs } from '../chaos/chaos-checks.js';
import type { StoredAnswer } from '../chaos/chaos-database.js';
import { ChaosPlan, renderedSteer } from '../chaos/chaos-plan.js';
import { runChaos } from '../chaos/chaos-run.js';
import { createRandom } from '../chaos/random.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const shape = { replicas: 3, sessions: 10, steers: 60 };
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});

afterAll(async () => {
  await database?.drop();
});

describe('replicas under chaos', () => {
  it(`keeps every promise with ${shape.replicas} replicas, ${shape.sessions} sessions and ${shape.steers} steers (CI scale) while replicas are SIGKILLed every ~3 s, deciders reset and database connections drop`, async () => {
    const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : undefined;
    const run = await runChaos({
      databaseUrl: database.url,
      ...shape,
      trafficMs: 20_000,
      killEveryMs: [2_500, 3_500],
      settleTimeoutMs: 75_000,
      leaseTtlSeconds: 2,
      // Memory under chaos: forks at every 1% step, summarizers that take seconds (so they are live
      // when replicas are killed or hand their leases over, issue 28), deciders that mostly reset,
      // and every database connection dropped every few seconds.
      memory: { contextWindow: 12_000, resetChance: 0.7, stepPercent: 1, summarizerDelayMs: [2_000, 4_000] },
      dropConnectionsEveryMs: [3_000, 5_000],
      ...(seed !== undefined ? { seed } : {}),
      ...(process.env['CHAOS_VERBOSE'] ? { say: (line: string) => console.log(`[chaos] ${line}`) } : {}),
    });
    console.log(run.summary);
    const { figures } = run;
    expect(figures.kills).toBeGreaterThan(0);
    expect(figures.resets).toBeGreaterThan(0);
    expect(figures.connectionDrops).toBeGreaterThan(0);
    expect(figures.memory.memoryRuns['summarizer succeeded']).toBeGreaterThan(0);
    // Delayed, but bounded: a message reaches the model within a minute; an answer the thread
    // within the outbox claim (60 s, for a post whose sender was SIGKILLed mid-send) and a retry.
    expect(figures.steerDelayMs.max).toBeLessThan(60_000);
    expect(figures.answerDelayMs.max).toBeLessThan(90_000);
    expect({
      settled: figures.settled,
      duplicates: run.duplicates,
      losses: run.losses,
      overlaps: run.overlaps,
      unfinishedRequests: figures.unfinishedRequests,
      queued: figures.leftovers.queuedSteers,
      outboxOpen: figures.leftovers.outboxOpen,
      outboxFailed: figures.outboxFailed,
      crashes: figures.crashes,
      summarizerOverlaps: figures.memory.summarizerOverlaps,
      memoryRunsLeftRunning: figures.memory.runsLeftRunning,
      unrequestedResets: figures.memory.unrequestedResets,
      carryOverLosses: figures.memory.carryOverLosses,
    }, run.problems.join('\n')).toEqual({
      settled: true, duplicates: 0, losses: 0, overlaps: 0, unfinishedRequests: 0, queued: 0, outboxOpen: 0, outboxFailed: 0, crashes: 0,
      summarizerOverlaps: 0, memoryRunsLeftRunning: 0, unrequestedResets: 0, carryOverLosses: 0,
    });
    expect(figures.messagesInModelOnce).toBe(shape.sessions + shape.steers);
  }, 200_000);
});

describe('the chaos checks', () => {
  const teamId = 'T0HIPPO';
  const sessionId = 'session-1';
  const segmentId = 'segment-1';

  /** One session with a mention and two steers, all acknowledged, stored and taken. */
  function scenario() {
    const plan = new ChaosPlan(createRandom(7));
    const session = plan.addSession();
    const steers = [plan.addSteer(session), plan.addSteer(session)];
    for (const message of [session.mention, ...steers]) message.acknowledged = true;
    const rendered = [session.mention, ...steers].map((message) => ({ role: 'user', content: renderedSteer(message) }));
    let index = 0;
    const request = (messages: Array<Record<string, unknown>>, receivedAt: number, respondedAt: number | undefined): RecordedRequest => ({
      index: index++, method: 'POST', path: '/v1/chat/completions', body: { messages, prompt_cache_key: sessionId }, rawBody: '', headers: {}, receivedAt,
      ...(respondedAt !== undefined ? { respondedAt } : {}),
    });
    const answers: StoredAnswer[] = [{ sessionId, segmentId, seq: 3, text: 'Chaos answer #0' }, { sessionId, segmentId, seq: 6, text: 'Chaos answer #1' }];
    const post = (answer: StoredAnswer): FakeSlackMessage => ({
      channel: session.channel, ts: `1800000000.00000${answer.seq}`, thread_ts: session.mention.ts, markdown_text: answer.text, user: 'UHIPPOBOT', bot_id: 'BHIPPO',
      metadata: { event_type: 'hippo_outbox', event_payload: { idempotency_key: `answer:${segmentId}:${answer.seq}:1` } },
    });
    const inputs: CheckInputs = {
      plan,
      teamId,
      requests: [
        request([{ role: 'system', content: 'init' }, rendered[0]!], 1_000, 1_200),
        request([{ role: 'system', content: 'init' }, rendered[0]!, { role: 'assistant', content: 'Chaos answer #0' }, rendered[1]!, rendered[2]!], 1_300, 1_500),
      ],
      posts: answers.map(post),
      database: {
        sessionsByThread: async () => new Map([[`${session.channel}:${session.mention.ts}`, sessionId]]),
        steers: async () => [session.mention, ...steers].map((message) => ({ sessionId, platformMessageKey: `slack:${teamId}:${session.channel}:${message.ts}`, status: 'taken' })),
        answers: async () => answers,
        quiet: async () => ({ queuedSteers: 0, outboxOpen: 0, leasesHeld: 0, unsettledSessions: 0, awaitingDelivery: 0 }),
        failedOutboxItems: async () => [],
        modelCallErrors: async () => 0,
      },
    };
    return { inputs, rendered, answers, post, request };
  }

  it('finds nothing wrong in a clean run', async () => {
    const { figures, problems } = await checkChaosRun(scenario().inputs);
    expect(problems).toEqual([]);
    expect(figures).toMatchObject({ messagesAcknowledged: 3, messagesStored: 3, messagesInModelOnce: 3, messageLosses: 0, messageDuplicates: 0, answersPostedOnce: 2, answerLosses: 0, answerDuplicates: 0, duplicatePosts: 0, overlaps: 0, unfinishedRequests: 0 });
  });

  it('counts a steer no request ever had, a steer twice in one request, and an answer never posted', async () => {
    const { inputs, rendered, answers, post, request } = scenario();
    // The third message never reached the model; the second is twice in the last request.
    const requests = [request([{ role: 'system', content: 'init' }, rendered[0]!], 1_000, 1_200), request([{ role: 'system', content: 'init' }, rendered[0]!, rendered[1]!, rendered[1]!], 2_000, 2_100)];
    const { figures } = await checkChaosRun({ ...inputs, requests, posts: [post(answers[0]!)] });
    expect(figures).toMatchObject({ messageLosses: 1, messageDuplicates: 1, answerLosses: 1, answersPostedOnce: 1 });
  });

  it('does not count a steer that a reset left out of the later contexts as lost', async () => {
    const { inputs, rendered, request } = scenario();
    // After a reset the context starts from memory: earlier messages need not be carried.
    const afterReset = request([{ role: 'system', content: 'init after reset' }, rendered[2]!], 1_600, 1_700);
    const { figures, problems } = await checkChaosRun({ ...inputs, requests: [...inputs.requests, afterReset] });
    expect(problems).toEqual([]);
    expect(figures).toMatchObject({ messageLosses: 0, messagesInModelOnce: 3 });
  });

  it('counts an answer posted twice, and two worker requests of a session at the same time', async () => {
    const { inputs, answers, post, request } = scenario();
    const overlapping = request([{ role: 'system', content: 'init' }], 1_100, undefined);
    const { figures } = await checkChaosRun({ ...inputs, requests: [...inputs.requests, overlapping], posts: [...inputs.posts, post(answers[1]!)] });
    expect(figures).toMatchObject({ answerDuplicates: 1, duplicatePosts: 1, overlaps: 2, unfinishedRequests: 1 });
  });
});
