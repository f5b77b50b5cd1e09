// The chaos test, short form (issue "Several replicas", item 5): 3 replica processes on one
// Postgres, SIGKILLed at random every ~3 s and replaced, while Slack delivers mentions and steers
// to whichever replica is up. Scaled down from the 30 sessions / 200 steers so it stays
// well under two minutes on a 2-core runner (every restart costs a replica ~3 s of CPU); the full
// numbers are the long form's defaults: `npx tsx scripts/chaos.ts`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChaos } from '../chaos/chaos-run.js';
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
  it(`keeps every promise with ${shape.replicas} replicas, ${shape.sessions} sessions and ${shape.steers} steers (CI scale) while replicas are SIGKILLed every ~3 s`, async () => {
    const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : undefined;
    const run = await runChaos({
      databaseUrl: database.url,
      ...shape,
      trafficMs: 20_000,
      killEveryMs: [2_500, 3_500],
      settleTimeoutMs: 75_000,
      leaseTtlSeconds: 2,
      ...(seed !== undefined ? { seed } : {}),
      ...(process.env['CHAOS_VERBOSE'] ? { say: (line: string) => console.log(`[chaos] ${line}`) } : {}),
    });
    console.log(run.summary);
    const { figures } = run;
    expect(figures.kills).toBeGreaterThan(0);
    expect({
      settled: figures.settled,
      duplicates: run.duplicates,
      losses: run.losses,
      overlaps: run.overlaps,
      unfinishedRequests: figures.unfinishedRequests,
      queued: figures.leftovers.queuedSteers,
      outboxOpen: figures.leftovers.outboxOpen,
      outboxFailed: figures.outboxFailed,
      errorNotes: figures.errorNotes,
      crashes: figures.crashes,
    }, run.problems.join('\n')).toEqual({
      settled: true, duplicates: 0, losses: 0, overlaps: 0, unfinishedRequests: 0, queued: 0, outboxOpen: 0, outboxFailed: 0, errorNotes: 0, crashes: 0,
    });
    expect(figures.messagesInModelOnce).toBe(shape.sessions + shape.steers);
  }, 170_000);
});
