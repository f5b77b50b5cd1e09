// Several replicas on one Postgres: one driver per session (leases), wake-ups, take-over after a
// crash, fencing of stale writers, graceful shutdown.
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Outbox } from '../../src/adapters/chat/outbox.js';
import { OutboxStore } from '../../src/adapters/storage/outbox-store.js';
import { openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { PostgresWakeups } from '../../src/adapters/storage/wakeups.js';
import { LeaseHeartbeat } from '../../src/core/runner/lease-heartbeat.js';
import { LeaseKeeper } from '../../src/core/runner/lease-keeper.js';
import type { AnyTool } from '../../src/core/tool.js';
import { createLogger } from '../../src/log.js';
import { shellTools } from '../../src/tools/shell.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createEmptyDatabase, createTestDatabase, type TestDatabase } from '../support/database.js';
import { takeDatabaseAway } from '../support/database-faults.js';
import { conversation, shape, slowTool } from '../support/model-script.js';
import { startScript } from '../support/processes.js';
import { until } from '../support/wait.js';

const log = createLogger('silent');
let database: TestDatabase;
let model: FakeModelServer;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeModelServer();
});
afterAll(async () => {
  await model.close();
  await database.drop();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  model.reset();
});

/** The model requests of one session (replicas also drive what earlier tests left behind). */
function requestsFor(sessionId: string) {
  return model.requests.filter((request) => request.body.prompt_cache_key === sessionId);
}

/** A replica in this process: its own connection pool, lease owner and LISTEN connection. */
async function replica(name: string, tools: AnyTool[] = [], options: { leaseTtlMs?: number; leaseIdleGraceMs?: number } = {}): Promise<AgentHarness> {
  const connection: Database = await openDatabase({ databaseUrl: database.url, dataDir: '/nonexistent', log });
  const wakeups = await PostgresWakeups.start(connection.pool!, database.url, log);
  const harness = await createAgentHarness({
    database: connection,
    model,
    tools,
    replica: { owner: name, wakeups, leases: createLeaseStore(connection.prisma, connection.pool), leaseTtlMs: options.leaseTtlMs ?? 10_000, sweepIntervalMs: 300, leaseIdleGraceMs: options.leaseIdleGraceMs ?? 0 },
  });
  harness.agent.runners.startSweeping();
  closers.push(async () => {
    await harness.close();
    await wakeups.close();
    await connection.close();
  });
  return harness;
}

describe('replicas on one Postgres', () => {
  it('lets one replica drive while the other only enqueues and notifies', async () => {
    const slow = slowTool();
    const first = await replica('replica-a', [slow.tool]);
    const second = await replica('replica-b', [slow.tool]);
    model.enqueue({ toolCalls: [{ id: 't1', name: 'slow_step', arguments: {} }] }, { content: 'answered both' });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await until(slow.started, 10_000, 'tool start');
    const result = await second.agent.submit(personMessage(thread, 'from the other replica', 'Grace'), { startSession: false });
    expect(result.inserted).toBe(true);
    // The driver hears of it by NOTIFY (the steer is durable already; the notice follows within ms).
    const driver = await first.agent.runner(session!.id);
    await until(() => driver.steers.mayHaveQueued, 5_000, 'the driver notified');
    slow.open();
    await first.waitForEvent('answer', (event) => event.text === 'answered both');
    await (await first.agent.runner(session!.id)).whenIdle();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(second.events.filter((event) => event.type === 'run-start')).toHaveLength(0);
    expect(first.events.filter((event) => event.type === 'run-start')).toHaveLength(1);
    expect(shape(conversation(requestsFor(session!.id)[1]!.body)).slice(-1)).toEqual(['user:from the other replica']);
    // Released at idle (once its memory runs ended too), with its token kept.
    const released = async () => (await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session!.id } })).released;
    await until(released, 10_000, 'the lease released at idle');
  });

  it('carries out a pause and a reset said on the replica that does not drive', async () => {
    const slow = slowTool();
    // The first keeps its lease while idle, so the second can never take the work over.
    const first = await replica('replica-p', [slow.tool], { leaseIdleGraceMs: 60_000 });
    const second = await replica('replica-q', [slow.tool]);
    let secondClaims = 0;
    const leases = second.deps.replica.leases;
    const acquire = leases.acquire.bind(leases);
    leases.acquire = async (...args) => {
      secondClaims += 1;
      return acquire(...args);
    };
    model.enqueue({ toolCalls: [{ id: 't1', name: 'slow_step', arguments: {} }] }, { content: 'after the pause' });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'start'), { startSession: true });
    await until(slow.started, 10_000, 'tool start');
    // The command reaches the other replica (a load balancer's choice): it may only request.
    await second.agent.pause(session!.id);
    slow.open();
    // The driver reads the request at its next checkpoint and stops there.
    const end = await first.waitForEvent('run-end', (event) => event.session.id === session!.id);
    expect(end.reason).toBe('paused');
    await until(async () => (await database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).paused, 5_000, 'paused stored');
    expect(requestsFor(session!.id)).toHaveLength(1);
    // A reset said on the second replica is done by the lease holder, once; the second asked
    // for the lease once and did not retry in a loop.
    const claimsBefore = secondClaims;
    expect(await second.agent.reset(session!.id)).toBe(true);
    await first.waitForEvent('context-reset', (event) => event.session.id === session!.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(secondClaims - claimsBefore).toBe(1);
    expect(await database.prisma.segment.count({ where: { sessionId: session!.id } })).toBe(2);
    // Resumed from the second replica, the first carries on.
    await second.agent.resume(session!.id);
    await first.waitForEvent('answer', (event) => event.session.id === session!.id && event.text === 'after the pause');
  });

  it('cancels the driver\'s hanging model call at once when Stop is said on the other replica', async () => {
    const first = await replica('replica-s', [], { leaseIdleGraceMs: 60_000 });
    const second = await replica('replica-t');
    model.enqueue({ hang: true });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'hang on'), { startSession: true });
    await model.waitFor((request) => request.body.prompt_cache_key === session!.id);
    const asked = Date.now();
    expect(await second.agent.stopRun(session!.id, 'Grace')).toBe('stopping');
    const end = await first.waitForEvent('run-end', (event) => event.session.id === session!.id);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Grace' });
    // Told by NOTIFY, not at a checkpoint that a hanging call would never reach.
    expect(Date.now() - asked).toBeLessThan(3_000);
    await until(async () => (await database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).paused, 5_000, 'paused stored');
    expect(second.events.filter((event) => event.type === 'run-start')).toHaveLength(0);
  });

  it('keeps the lease through a turn that began in the idle grace, when the grace ends mid-turn', async () => {
    const slow = slowTool();
    const first = await replica('replica-g', [slow.tool], { leaseIdleGraceMs: 300 });
    model.enqueue({ content: 'first' }, { toolCalls: [{ id: 'g1', name: 'slow_step', arguments: {} }] }, { content: 'second' });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'one'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.session.id === session!.id && event.text === 'first');
    const runner = await first.agent.runner(session!.id);
    await runner.whenIdle();
    await first.agent.submit(personMessage(thread, 'two'), { startSession: false });
    await until(slow.started, 5_000, 'tool start');
    await new Promise((resolve) => setTimeout(resolve, 600)); // the grace timer's moment has passed
    const lease = await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session!.id } });
    expect([lease.released, runner.lease.token]).toEqual([false, Number(lease.fencingToken)]);
    slow.open();
    await first.waitForEvent('answer', (event) => event.session.id === session!.id && event.text === 'second');
  });

  it('drives a message on the replica that received it when nobody holds the lease', async () => {
    const first = await replica('replica-c');
    const second = await replica('replica-d');
    model.enqueue({ content: 'first answer' }, { content: 'second answer' });
    const thread = newThread();
    const { session } = await first.agent.submit(personMessage(thread, 'one'), { startSession: true });
    await first.waitForEvent('answer', (event) => event.session.id === session!.id);
    await (await first.agent.runner(session!.id)).whenIdle();
    await until(async () => (await database.prisma.sessionLease.findUnique({ where: { sessionId: session!.id } }))?.released === true, 5_000, 'release');
    await second.agent.submit(personMessage(thread, 'two'), { startSession: false });
    const answer = await Promise.race([
      second.waitForEvent('answer', (event) => event.session.id === session!.id && event.fencingToken !== null),
      second.waitForEvent('error', (event) => event.session.id === session!.id).then((event) => Promise.reject(new Error(event.error.message))),
    ]);
    expect(answer.text).toBe('second answer');
    // The second replica reloaded the context the first one wrote.
    expect(shape(conversation(requestsFor(session!.id)[1]!.body))).toEqual(['user:one', 'assistant:first answer', 'user:two']);
  });

  it('continues a killed replica\'s session elsewhere once its lease expires', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-replica-'));
    const workspaces = join(dataDir, 'workspaces');
    const stores = createPrismaStores(database.prisma);
    const thread = newThread();
    const { session } = await stores.sessions.open(thread, { title: 't', scope: 'channel' });
    await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `console:${thread.threadKey}:1`, authorId: 'u', authorName: 'Ada', text: 'run it' });
    const command = 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; if [ $n -eq 1 ]; then sleep 60; fi; echo "run $n done"';
    model.respond((body) =>
      body.messages.at(-1)?.['role'] === 'tool'
        ? { content: 'Done on the other replica.', usage: { promptTokens: 300, cachedTokens: 0, completionTokens: 5 } }
        : { toolCalls: [{ id: 'job', name: 'shell', arguments: { command } }], usage: { promptTokens: 300, cachedTokens: 0, completionTokens: 5 } },
    );
    const doomed = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url,
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory,shell', APPROVAL_REQUIRED: 'none', LEASE_TTL_SECONDS: '2',
      // This DATA_DIR is left behind: no loop-mounted workspace disk with it (workspace-disks.test.ts has those).
      WORKSPACE_QUOTA: 'sampler',
    });
    await until(async () => (await readFile(join(workspaces, session.id, 'count'), 'utf8').catch(() => '')).trim() === '1', 30_000, 'job start');
    const lease = await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session.id } });
    expect(lease.released).toBe(false);
    doomed.kill('SIGKILL');
    await doomed.exited;

    const survivor = await replica('replica-e', shellTools({ root: workspaces, env: { PATH: process.env['PATH'] ?? '' } }), { leaseTtlMs: 2_000 });
    // The survivor also re-sends what earlier tests' sessions still owe (no chat adapter marks
    // them delivered here): only this session's events count.
    const answer = await survivor.waitForEvent('answer', (event) => event.session.id === session.id, 30_000);
    expect(answer.text).toBe('Done on the other replica.');
    const taken = await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session.id } });
    expect(Number(taken.fencingToken)).toBeGreaterThan(Number(lease.fencingToken));
    const final = model.requests.filter((request) => request.body.prompt_cache_key === session.id && request.body.messages.at(-1)?.['role'] === 'tool');
    expect(final).toHaveLength(1);
    expect(shape(conversation(final[0]!.body))).toEqual(['user:run it', 'assistant→[job]', 'tool(job)']);
  }, 90_000);

  it('renews every lease a process holds in one statement per beat, and tells only the session whose lease was taken', async () => {
    const stores = createPrismaStores(database.prisma);
    // On pg's pool, as the service runs it (the fencing test below keeps the Prisma path).
    const leases = createLeaseStore(database.prisma, database.pool);
    const beats: number[] = [];
    const renewAll = leases.renewAll.bind(leases);
    leases.renewAll = async (owner, held, ttlMs) => {
      beats.push(held.length);
      return renewAll(owner, held, ttlMs);
    };
    const heartbeat = new LeaseHeartbeat(leases, 'one-process', 600, log);
    const keepers = await Promise.all([1, 2, 3].map(async () => {
      const { session } = await stores.sessions.open(newThread(), { title: 't', scope: 'channel' });
      const keeper = new LeaseKeeper(leases, session.id, 'one-process', 600, log, true, heartbeat);
      expect(await keeper.claim()).toBe('kept');
      return keeper;
    }));
    const [kept, taken, alsoKept] = keepers as [LeaseKeeper, LeaseKeeper, LeaseKeeper];
    const expiry = async (keeper: LeaseKeeper) => (await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: keeper.sessionId } })).expiresAt.getTime();
    const before = await expiry(kept);
    await until(() => beats.length >= 2, 5_000, 'two beats');
    // Each beat renewed all three in one statement, past their first expiry.
    expect(beats.slice(0, 2)).toEqual([3, 3]);
    expect(await expiry(kept)).toBeGreaterThan(before);
    // Another replica takes one lease after it expired: the next beat tells that keeper alone.
    await database.prisma.$executeRaw`UPDATE session_leases SET owner = 'other-replica', fencing_token = fencing_token + 1 WHERE session_id = ${taken.sessionId}`;
    await until(() => taken.lost, 5_000, 'the taken lease noticed');
    expect(taken.token).toBeNull();
    expect([kept.lost, alsoKept.lost]).toEqual([false, false]);
    // Released leases leave the beat; with none held, nothing is sent.
    await kept.release();
    await alsoKept.release();
    const sent = beats.length;
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(beats.length).toBe(sent);
    expect(beats.every((size) => size > 0)).toBe(true);
  });

  it('refuses the writes of a replica whose lease was taken (fencing)', async () => {
    const stores = createPrismaStores(database.prisma);
    const { session } = await stores.sessions.open(newThread(), { title: 't', scope: 'channel' });
    const leases = createLeaseStore(database.prisma);
    // The stale replica's heartbeat stalls (an event loop that stopped, a paused VM) while its
    // lease runs out and another replica takes it: a renewal landing in between would keep it.
    let stalled: Promise<void> | undefined;
    let resume = () => {};
    let waiting = 0;
    const stallable: typeof leases = {
      ...leases,
      renewAll: async (...args) => {
        if (stalled) {
          waiting += 1;
          await stalled;
        }
        return leases.renewAll(...args);
      },
    };
    const stale = new LeaseKeeper(stallable, session.id, 'stale-replica', 200, log);
    // The first holder ever follows nobody: its state is current without a reload.
    expect(await stale.claim()).toBe('kept');
    const staleToken = stale.token!;
    stalled = new Promise((resolve) => (resume = resolve));
    // One beat waits: none is on its way to the database (a heartbeat never sends two at once).
    await until(() => waiting > 0, 5_000, 'the stale heartbeat stalled');
    await database.prisma.$executeRaw`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = ${session.id}`;
    const fresh = new LeaseKeeper(leases, session.id, 'new-owner', 10_000, log);
    expect(await fresh.claim()).toBe('changed-hands');
    expect(fresh.token).toBeGreaterThan(staleToken);
    stalled = undefined;
    resume();

    const delivered: string[] = [];
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    const sender = outbox.startSender('console', async (item) => {
      delivered.push(item.idempotencyKey);
      return { platformMessageId: `m-${item.idempotencyKey}` };
    }, { pollMs: 50 });
    closers.push(async () => sender.stop());
    const refused = await outbox.enqueue({ idempotencyKey: `stale:${session.id}`, sessionId: session.id, platform: 'console', operation: 'post', payload: { text: 'from the past' }, fencingToken: BigInt(staleToken) });
    expect(refused).toEqual({ inserted: false, fenced: true });
    const accepted = await outbox.enqueue({ idempotencyKey: `fresh:${session.id}`, sessionId: session.id, platform: 'console', operation: 'post', payload: { text: 'current' }, fencingToken: BigInt(fresh.token!) });
    expect(accepted.inserted).toBe(true);
    await until(() => delivered.length === 1, 10_000, 'delivery');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(delivered).toEqual([`fresh:${session.id}`]);
    expect(await database.prisma.outboxItem.count({ where: { idempotencyKey: `stale:${session.id}` } })).toBe(0);
    // Released later, the fresh owner's token stays the largest: its queued writes still go out.
    await fresh.release();
    const late = await outbox.enqueue({ idempotencyKey: `late:${session.id}`, sessionId: session.id, platform: 'console', operation: 'post', payload: { text: 'after release' }, fencingToken: BigInt(fresh.token ?? staleToken + 1) });
    expect(late.inserted).toBe(true);
    // The stale keeper notices at its next renewal.
    await until(() => stale.lost, 5_000, 'lease loss noticed');
  });
});

describe('wake-ups', () => {
  it('re-listens after losing its connection and says notifications may have been missed', async () => {
    const connection: Database = await openDatabase({ databaseUrl: database.url, dataDir: '/nonexistent', log });
    const wakeups = await PostgresWakeups.start(connection.pool!, database.url, log);
    closers.push(async () => {
      await wakeups.close();
      await connection.close();
    });
    const heard: string[] = [];
    wakeups.subscribe((sessionId, reason) => heard.push(`${reason}:${sessionId}`));
    await wakeups.notify('s1');
    await wakeups.notify('s1', 'flags');
    await until(() => heard.length === 2, 5_000, 'notifications');
    expect(heard).toEqual(['work:s1', 'flags:s1']);
    // The listening connection is cut (a Postgres restart, a network blip).
    await database.prisma.$executeRaw`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN hippo_session_work' AND datname = current_database() AND pid <> pg_backend_pid()`;
    await until(() => heard.includes('missed:'), 10_000, 'missed after the reconnect');
    await wakeups.notify('s2');
    await until(() => heard.includes('work:s2'), 5_000, 'notifications after the reconnect');
  });
  it('starts while the database refuses connections, then listens once it is back and says notifications may have been missed', async () => {
    // A database of its own: taking it away must not touch the other tests' connections.
    const own = await createEmptyDatabase('hippo_wake');
    const pool = new pg.Pool({ connectionString: own.url });
    pool.on('error', () => undefined);
    const away = await takeDatabaseAway(own.name);
    let wakeups: PostgresWakeups | undefined;
    closers.push(async () => {
      await away.restore();
      await wakeups?.close();
      await pool.end();
      await own.drop();
    });
    // A replica starting during a failover (or as its connections are dropped) starts all the same.
    wakeups = await PostgresWakeups.start(pool, own.url, log);
    const heard: string[] = [];
    wakeups.subscribe((sessionId, reason) => heard.push(`${reason}:${sessionId}`));
    await away.restore();
    await until(() => heard.includes('missed:'), 10_000, 'missed once it listens');
    await wakeups.notify('s3');
    await until(() => heard.includes('work:s3'), 5_000, 'notifications once it listens');
    expect(heard.filter((each) => each === 'work:s3')).toEqual(['work:s3']);
  });
});

describe('graceful shutdown', () => {
  it('sends the writes already queued when the outbox sender stops', async () => {
    const stores = createPrismaStores(database.prisma);
    const { session } = await stores.sessions.open(newThread(), { title: 't', scope: 'channel' });
    const delivered: string[] = [];
    const outbox = new Outbox(new OutboxStore(database.prisma, database.pool), log);
    // A sender that polls rarely: only the flush at stop can send these in time.
    const sender = outbox.startSender('flush-test', async (item) => {
      delivered.push(item.idempotencyKey);
      return {};
    }, { pollMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const index of [1, 2, 3]) {
      await database.prisma.outboxItem.create({ data: { idempotencyKey: `flush:${session.id}:${index}`, sessionId: session.id, platform: 'flush-test', operation: 'post', payload: {} } });
    }
    await sender.stop();
    expect(delivered).toEqual([1, 2, 3].map((index) => `flush:${session.id}:${index}`));
  });

  it('finishes the running tool batch on SIGTERM, releases the lease and exits within 30 s', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-sigterm-'));
    const stores = createPrismaStores(database.prisma);
    const thread = newThread();
    const { session } = await stores.sessions.open(thread, { title: 't', scope: 'channel' });
    await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `console:${thread.threadKey}:1`, authorId: 'u', authorName: 'Ada', text: 'build' });
    model.respond((body) =>
      body.messages.at(-1)?.['role'] === 'tool'
        ? { content: 'all built' }
        : { toolCalls: [{ id: 'build', name: 'shell', arguments: { command: 'echo started > started; sleep 2; echo built' } }], usage: { promptTokens: 300, cachedTokens: 0, completionTokens: 5 } },
    );
    const service = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url,
      MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000', TOOLS: 'memory,shell', APPROVAL_REQUIRED: 'none',
      // This DATA_DIR is left behind: no loop-mounted workspace disk with it (workspace-disks.test.ts has those).
      WORKSPACE_QUOTA: 'sampler',
    });
    await until(async () => (await readFile(join(dataDir, 'workspaces', session.id, 'started'), 'utf8').catch(() => '')) !== '', 30_000, 'build start');
    const stopAt = Date.now();
    service.kill('SIGTERM');
    const { code } = await service.exited;
    expect(code).toBe(0);
    expect(Date.now() - stopAt).toBeLessThan(30_000);
    const toolRow = await database.prisma.contextMessage.findFirstOrThrow({ where: { segment: { sessionId: session.id }, role: 'tool' } });
    expect(toolRow.content).toContain('built');
    const lease = await database.prisma.sessionLease.findUniqueOrThrow({ where: { sessionId: session.id } });
    expect(lease.released).toBe(true);
    // The follow-up is left as backlog for the next start.
    expect(await stores.sessions.withBacklog()).toContain(session.id);
  }, 60_000);
});
