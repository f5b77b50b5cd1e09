// A chaos run (issue "Several replicas", item 5): replicas of the bot on one Postgres, the fake
// Slack Web API and the fake model in this process (loopback only), sessions started by mentions
// and steered by thread replies sent over time to random live replicas, a random replica SIGKILLed
// every few seconds and replaced. Then the killing stops, the run settles, the replicas are
// SIGTERMed, and the fakes' records and the database are checked. Used by the CI test
// (test/integration/chaos.test.ts) and the long form (scripts/chaos.ts).
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { startFakeSlackApi, type FakeSlackApi, markdownOf } from '../fakes/fake-slack-api.js';
import { checkChaosRun, type CheckFigures } from './chaos-checks.js';
import { ChaosDatabase } from './chaos-database.js';
import { checkMemory, type MemoryFigures } from './chaos-memory-checks.js';
import { chaosModel } from './chaos-model.js';
import { ChaosPlan, chaosPeople, mentionEvent, mentionMessageEvent, steerEvent, type PlannedSession } from './chaos-plan.js';
import { createRandom, type Random } from './random.js';
import { ReplicaPool, type ReplicaExit } from './replica-pool.js';
import { SlackTraffic } from './slack-traffic.js';

/** The shape of a run. Times in milliseconds. */
export interface ChaosOptions {
  /** A fresh, migrated database (e.g. from createTestDatabase()). */
  databaseUrl: string;
  replicas: number;
  sessions: number;
  steers: number;
  /** Messages are sent over this long. */
  trafficMs: number;
  /** A kill every [min, max] ms, from the start of the traffic until `killForMs`. */
  killEveryMs: [number, number];
  /** How long the killing lasts (default: trafficMs). */
  killForMs?: number;
  /** Longest wait for everything to settle after the traffic (default 120 s). */
  settleTimeoutMs?: number;
  leaseTtlSeconds?: number;
  /**
   * Memory under chaos: a context window small enough that summarizers and deciders fork every
   * few turns, and the chance that a decider resets (default: a window so large nothing forks);
   * optionally the trigger step (MEMORY_STEP_PERCENT) and how long a summarizer's model call takes
   * (slow summarizers are live when replicas are killed or hand their leases over).
   */
  memory?: { contextWindow: number; resetChance: number; stepPercent?: number; summarizerDelayMs?: [number, number] };
  /** Every [min, max] ms all the replicas' database connections are dropped (default: never). */
  dropConnectionsEveryMs?: [number, number];
  seed?: number;
  /** Replica logs are written here (default: a new temporary directory). */
  logDir?: string;
  /** Progress lines (default: none). */
  say?: (line: string) => void;
}

/** Everything a run measured. */
export interface ChaosFigures extends CheckFigures {
  seed: number;
  replicas: number;
  sessions: number;
  steers: number;
  kills: number;
  killsSkipped: number;
  replicasStarted: number;
  crashes: number;
  /** Replicas whose SIGTERM exit was not a clean 0. */
  uncleanStops: number;
  eventsSent: number;
  eventRequests: number;
  eventRetries: number;
  eventsUnacknowledged: number;
  /** Failed Events API requests by reason (each was retried). */
  eventFailures: Record<string, number>;
  /** Time to the 200 of acknowledged Events API requests: median and slowest (ms). */
  ackMs: { median: number; max: number };
  /** Start-to-ready times of replicas: median and slowest (ms). */
  replicaStartMs: { median: number; max: number };
  /** Retried posts that found their earlier copy in Slack (deliver.ts dedupe). */
  postsFoundOnRetry: number;
  leasesLost: number;
  /** Outbox writes refused by fencing (a lease token newer than the writer's existed). */
  fencedWrites: number;
  /** Owed answers/notes re-emitted after a recovery or take-over. */
  redeliveries: number;
  /** Runner loads or sweeps that failed (e.g. two replicas writing a new session's init messages). */
  sweepFailures: number;
  /** Context resets done, and how often every database connection was dropped. */
  resets: number;
  connectionDrops: number;
  /** The memory's promises, from the database (chaos-memory-checks.ts). */
  memory: MemoryFigures;
  /** Loads that failed the runs of a dead replica or an earlier process (memory-runs-interrupted logs). */
  memoryRunsInterrupted: number;
  /** Activities retried after a storage failure (replica logs). */
  storageRetries: number;
  settled: boolean;
  /** What the settle phase waited for last (e.g. "outboxOpen 2 {\"sent\":310,\"sending\":2}"). */
  settleLastWait: string;
  timings: { startMs: number; trafficMs: number; settleMs: number; stopMs: number; totalMs: number };
}

/** The outcome of a run. */
export interface ChaosReport {
  figures: ChaosFigures;
  /** Totals of the three promises. */
  duplicates: number;
  losses: number;
  overlaps: number;
  /** True when every figure that must be 0 is 0 and the run settled. */
  ok: boolean;
  problems: string[];
  /** Things that went wrong without breaking a promise (error notes, name fallbacks, failed sweeps). */
  warnings: string[];
  summary: string;
  logDir: string;
}

const signingSecret = 'chaos-signing-secret';
/** Deliveries in flight at most (Slack's own concurrency towards one app is bounded too). */
const maxInFlight = 12;

/** Runs the chaos scenario and checks it; never throws for a failed check (see `ok`). */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const began = Date.now();
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = createRandom(seed);
  const say = options.say ?? (() => undefined);
  const slack = await startFakeSlackApi();
  for (const person of chaosPeople) slack.addUser({ id: person.id, displayName: person.name });
  const model = await startFakeModelServer();
  model.respond(chaosModel(createRandom(seed ^ 0x5eed), {
    resetChance: options.memory?.resetChance ?? 0,
    ...(options.memory?.summarizerDelayMs ? { summarizerDelayMs: options.memory.summarizerDelayMs } : {}),
  }));
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-chaos-'));
  const logDir = options.logDir ?? join(dataDir, 'logs');
  const pool = new ReplicaPool({ env: replicaEnv(options, dataDir, slack, model), logDir, say });
  const database = await ChaosDatabase.open(options.databaseUrl);
  try {
    say(`seed ${seed}: starting ${options.replicas} replicas`);
    await pool.start(options.replicas);
    const startMs = Date.now() - began;
    const plan = new ChaosPlan(random);
    const traffic = new SlackTraffic({ signingSecret, teamId: slack.teamId, random, endpoints: () => pool.liveEndpoints() });

    const trafficBegan = Date.now();
    const trafficEnds = trafficBegan + (options.killForMs ?? options.trafficMs);
    const killing = killLoop(pool, random, options.killEveryMs, trafficEnds);
    const dropping = options.dropConnectionsEveryMs ? dropLoop(database, random, options.dropConnectionsEveryMs, trafficEnds) : Promise.resolve(0);
    await sendTraffic({ options, plan, traffic, random, botUserId: slack.botUserId, say });
    const [, , connectionDrops] = await Promise.all([traffic.settled(), killing, dropping]);
    const trafficMs = Date.now() - trafficBegan;
    say(`traffic done: ${traffic.deliveries.length} events, ${pool.kills} kills; settling`);

    const settleBegan = Date.now();
    const { settled, lastWait } = await settle(database, model, options.settleTimeoutMs ?? 120_000, say);
    const settleMs = Date.now() - settleBegan;
    const stopBegan = Date.now();
    const exits = await pool.stopAll();
    const stopMs = Date.now() - stopBegan;

    const checks = await checkChaosRun({ plan, requests: model.requests, posts: slack.messages, database, teamId: slack.teamId });
    const memory = await checkMemory({ database, sessionLogs: sessionLogs(pool) });
    await pool.saveLogs();
    await saveRecords(logDir, { plan, model, slack, database, history: pool.history });
    const figures: ChaosFigures = {
      ...checks.figures,
      seed,
      replicas: options.replicas,
      sessions: options.sessions,
      steers: options.steers,
      ...poolFigures(pool, exits),
      ...trafficFigures(traffic),
      resets: await database.resets(),
      connectionDrops,
      memory: memory.figures,
      settled,
      settleLastWait: lastWait,
      timings: { startMs, trafficMs, settleMs, stopMs, totalMs: Date.now() - began },
    };
    return report(figures, [...checks.problems, ...memory.problems], logDir);
  } finally {
    await pool.stopAll(5_000).catch(() => undefined);
    await database.close().catch(() => undefined);
    await model.close();
    await slack.close();
  }
}

function poolFigures(pool: ReplicaPool, exits: ReplicaExit[]) {
  const messages = pool.logRecords().map(({ record }) => (typeof record['msg'] === 'string' ? record['msg'] : ''));
  const countLogs = (message: string) => messages.filter((line) => line.startsWith(message)).length;
  return {
    kills: pool.kills,
    killsSkipped: pool.killsSkipped,
    replicasStarted: pool.replicas.length,
    crashes: pool.crashes,
    uncleanStops: exits.filter((exit) => exit.code !== 0).length,
    replicaStartMs: spread(pool.startTimes()),
    postsFoundOnRetry: countLogs('slack-post-already-sent'),
    leasesLost: countLogs('lease-lost'),
    fencedWrites: countLogs('outbox-write-fenced'),
    redeliveries: countLogs('deliveries-resent'),
    sweepFailures: countLogs('sweep-failed'),
    storageRetries: countLogs('storage-retry'),
    memoryRunsInterrupted: countLogs('memory-runs-interrupted'),
  };
}

/** The replicas' log messages per session id. */
function sessionLogs(pool: ReplicaPool): Map<string, string[]> {
  const logs = new Map<string, string[]>();
  for (const { record } of pool.logRecords()) {
    if (typeof record['sessionId'] !== 'string' || typeof record['msg'] !== 'string') continue;
    logs.set(record['sessionId'], [...(logs.get(record['sessionId']) ?? []), record['msg']]);
  }
  return logs;
}

function trafficFigures(traffic: SlackTraffic) {
  return {
    eventsSent: traffic.deliveries.length,
    eventRequests: traffic.deliveries.reduce((sum, delivery) => sum + delivery.attempts, 0),
    eventRetries: traffic.retries,
    eventsUnacknowledged: traffic.deliveries.filter((delivery) => !delivery.acknowledged).length,
    eventFailures: traffic.failureReasons(),
    ackMs: spread(traffic.ackTimes),
  };
}

function replicaEnv(options: ChaosOptions, dataDir: string, slack: FakeSlackApi, model: FakeModelServer): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    DATA_DIR: dataDir,
    OPENAI_API_KEY: 'chaos-key',
    OPENAI_BASE_URL: model.url,
    MODEL: 'chaos-model',
    // By default large enough that no memory run or reset happens: the worker's requests are the subject.
    MODEL_CONTEXT_WINDOW: String(options.memory?.contextWindow ?? 1_000_000),
    // Under chaos a decider at every step, from the first: resets as often as the run can have them.
    MEMORY_DECIDER_FLOOR_PERCENT: '0',
    MEMORY_DECIDER_EVERY: '1',
    ...(options.memory?.stepPercent ? { MEMORY_STEP_PERCENT: String(options.memory.stepPercent) } : {}),
    SLACK_BOT_TOKEN: 'xoxb-chaos-token',
    SLACK_SIGNING_SECRET: signingSecret,
    SLACK_API_URL: slack.apiUrl,
    LEASE_TTL_SECONDS: String(options.leaseTtlSeconds ?? 2),
    TOOLS: 'memory',
    LOG_LEVEL: 'info',
  };
}

interface TrafficScope {
  options: ChaosOptions;
  plan: ChaosPlan;
  traffic: SlackTraffic;
  random: Random;
  botUserId: string;
  say: (line: string) => void;
}

/**
 * Mentions go out over the first fifth of the traffic time, steers at random times over all of
 * it, each to a random session whose mention was acknowledged (a reply in a thread without a
 * session is chatter the bot rightly ignores).
 */
async function sendTraffic(scope: TrafficScope): Promise<void> {
  const { options, plan, traffic, random } = scope;
  const began = Date.now();
  const mentionWindow = options.trafficMs / 5;
  const schedule = [
    ...Array.from({ length: options.sessions }, (_unused, index) => ({ at: (index * mentionWindow) / options.sessions, kind: 'mention' as const })),
    ...Array.from({ length: options.steers }, () => ({ at: random.int(Math.floor(mentionWindow / 4), options.trafficMs), kind: 'steer' as const })),
  ].sort((left, right) => left.at - right.at);
  const started: PlannedSession[] = [];
  const pending = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    pending.add(promise);
    void promise.finally(() => pending.delete(promise));
  };
  for (const [position, step] of schedule.entries()) {
    await sleep(Math.max(0, began + step.at - Date.now()));
    while (pending.size >= maxInFlight) await Promise.race(pending);
    if (step.kind === 'mention') {
      const session = plan.addSession();
      // Slack sends app_mention and the message.channels twin of the same message together.
      track(Promise.all([traffic.send(mentionEvent(session, scope.botUserId)), traffic.send(mentionMessageEvent(session, scope.botUserId))]).then((deliveries) => {
        session.mention.acknowledged = deliveries.some((delivery) => delivery.acknowledged);
        if (session.mention.acknowledged) session.mention.acknowledgedAt = Date.now();
        if (session.mention.acknowledged) started.push(session);
      }));
      continue;
    }
    // Early steers may find no acknowledged session yet: wait for one, within the traffic time.
    const waitUntil = began + options.trafficMs + 30_000;
    while (started.length === 0 && Date.now() < waitUntil) await sleep(50);
    if (started.length === 0) throw new Error('no session was started: every mention failed');
    const session = random.pick(started);
    const steer = plan.addSteer(session);
    track(traffic.send(steerEvent(session, steer)).then((delivery) => {
      steer.acknowledged = delivery.acknowledged;
      if (delivery.acknowledged) steer.acknowledgedAt = Date.now();
    }));
    if ((position + 1) % 50 === 0) scope.say(`sent ${position + 1}/${schedule.length} messages`);
  }
  await Promise.all(pending);
}

/** Kills a random replica every [min, max] ms until `until`. */
async function killLoop(pool: ReplicaPool, random: Random, [min, max]: [number, number], until: number): Promise<void> {
  for (;;) {
    const wait = random.int(min, max);
    if (Date.now() + wait >= until) return;
    await sleep(wait);
    await pool.killRandom(random);
  }
}

/** Drops every database connection of the replicas every [min, max] ms until `until`; returns how often. */
async function dropLoop(database: ChaosDatabase, random: Random, [min, max]: [number, number], until: number): Promise<number> {
  let drops = 0;
  for (;;) {
    const wait = random.int(min, max);
    if (Date.now() + wait >= until) return drops;
    await sleep(wait);
    await database.dropConnections();
    drops += 1;
  }
}

/**
 * Waits until nothing is queued, every session ends in an answer and holds no lease, the outbox
 * is empty, nothing awaits delivery, and no model request is open, twice in a row.
 */
async function settle(database: ChaosDatabase, model: FakeModelServer, timeoutMs: number, say: (line: string) => void): Promise<{ settled: boolean; lastWait: string }> {
  const deadline = Date.now() + timeoutMs;
  let quietProbes = 0;
  let lastReport = Date.now();
  let lastWait = 'nothing';
  while (Date.now() < deadline) {
    const state = await database.quiet();
    const openRequests = model.requests.filter((request) => request.respondedAt === undefined).length;
    const busy = Object.entries({ ...state, openRequests }).filter(([, value]) => typeof value === 'number' && value > 0);
    quietProbes = busy.length === 0 ? quietProbes + 1 : 0;
    if (quietProbes >= 2) return { settled: true, lastWait };
    if (busy.length) {
      // Outbox items still 'sending' after the traffic usually belong to a killed sender: they wait out its claim.
      const outbox = state.outboxOpen ? ` ${JSON.stringify(await database.outboxStatuses())}` : '';
      lastWait = `${busy.map(([name, value]) => `${name} ${String(value)}`).join(', ')}${outbox}`;
    }
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      say(`settling: ${lastWait}`);
    }
    await sleep(500);
  }
  return { settled: false, lastWait };
}

/** Writes what the fakes and the database recorded to <logDir>/run.json, for post-mortems. */
async function saveRecords(logDir: string, records: { plan: ChaosPlan; model: FakeModelServer; slack: FakeSlackApi; database: ChaosDatabase; history: string[] }): Promise<void> {
  const snippet = (value: unknown) => (typeof value === 'string' ? value.slice(0, 120) : value === undefined || value === null ? null : JSON.stringify(value).slice(0, 120));
  const run = {
    replicas: records.history,
    plan: records.plan.sessions,
    modelRequests: records.model.requests.map((request) => ({
      index: request.index, session: request.body.prompt_cache_key, receivedAt: request.receivedAt, respondedAt: request.respondedAt ?? null,
      messages: request.body.messages.map((message) => `${String(message['role'])}: ${snippet(message['content'] ?? message['tool_calls'])}`),
    })),
    posts: records.slack.messages.map((post) => ({ channel: post.channel, thread: post.thread_ts, ts: post.ts, key: post.metadata?.event_payload?.['idempotency_key'] ?? null, text: snippet(markdownOf(post) ?? post.text) })),
    answers: await records.database.answers(),
    steers: await records.database.steers(),
    outbox: await records.database.outboxStatuses(),
  };
  await mkdir(logDir, { recursive: true });
  await writeFile(join(logDir, 'run.json'), JSON.stringify(run, null, 1));
}

function spread(values: number[]): { median: number; max: number } {
  const sorted = [...values].sort((left, right) => left - right);
  return { median: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 };
}


function report(figures: ChaosFigures, problems: string[], logDir: string): ChaosReport {
  const duplicates = figures.messageDuplicates + figures.answerDuplicates + figures.duplicatePosts;
  const losses = figures.messageLosses + figures.answerLosses + figures.eventsUnacknowledged + (figures.messagesAcknowledged - figures.messagesStored);
  const overlaps = figures.overlaps;
  const { leftovers } = figures;
  const leftover = leftovers.queuedSteers + leftovers.outboxOpen + leftovers.leasesHeld + leftovers.unsettledSessions + (leftovers.awaitingDelivery ?? 0);
  const { memory } = figures;
  const memoryProblems = memory.summarizerOverlaps + memory.runsLeftRunning + memory.unrequestedResets + memory.carryOverLosses;
  const ok = figures.settled && duplicates + losses + overlaps + leftover + memoryProblems + figures.unfinishedRequests + figures.outboxFailed + figures.crashes + figures.uncleanStops === 0;
  const all = [...problems];
  if (!figures.settled) all.unshift('settle: the run did not settle before the deadline');
  if (figures.crashes) all.push(`replicas: ${figures.crashes} replicas crashed or did not start in time`);
  if (figures.uncleanStops) all.push(`replicas: ${figures.uncleanStops} replicas did not exit 0 on SIGTERM`);
  // Not promises of the issue, but worth a look: runs that failed, and names that fell back to ids.
  const warnings = [
    ...(figures.errorNotes ? [`${figures.errorNotes} error notes were posted (runs failed; see run-failed in the replica logs)`] : []),
    ...(figures.nameFallbacks ? [`${figures.nameFallbacks} steers reached the model under the user id (users.info slower than 1 s)`] : []),
    ...(figures.sweepFailures ? [`${figures.sweepFailures} sweeps or runner loads failed`] : []),
  ];
  const base = { figures, duplicates, losses, overlaps, ok, problems: all, warnings, logDir };
  return { ...base, summary: formatSummary(base) };
}

/** The summary block printed at the end of a run. */
export function formatSummary(run: Omit<ChaosReport, 'summary'>): string {
  const f = run.figures;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const awaiting = f.leftovers.awaitingDelivery === null ? 'n/a' : String(f.leftovers.awaitingDelivery);
  return [
    `=== Hippo chaos run · seed ${f.seed} ===`,
    `replicas   ${f.replicas} at a time · ${f.kills} SIGKILLs (${f.killsSkipped} turns skipped: <2 ready) · ${f.replicasStarted} started (ready in ${seconds(f.replicaStartMs.median)} median, ${seconds(f.replicaStartMs.max)} max) · ${f.crashes} crashes · ${f.uncleanStops} unclean stops`,
    `messages   ${f.messagesSent} sent (${f.sessions} mentions + ${f.steers} steers) · ${f.messagesAcknowledged} acknowledged · ${f.messagesStored} stored once · ${f.messagesInModelOnce} in the model exactly once`,
    `events     ${f.eventsSent} events · ${f.eventRequests} requests · ack in ${seconds(f.ackMs.median)} median, ${seconds(f.ackMs.max)} max · ${f.eventRetries} retried ${JSON.stringify(f.eventFailures)} · ${f.eventsUnacknowledged} never acknowledged`,
    `model      ${f.modelRequests} requests (${f.workerRequests} worker) · ${f.unfinishedRequests} unfinished · ${f.modelCallErrors} call errors · ${f.nameFallbacks} steers named by user id (lookup timed out)`,
    `replicas'  ${f.leasesLost} leases lost · ${f.fencedWrites} outbox writes fenced · ${f.redeliveries} re-deliveries after take-over · ${f.sweepFailures} failed sweeps/loads`,
    `faults     ${f.resets} context resets · ${f.connectionDrops} times every database connection dropped · ${f.storageRetries} activities retried after a storage failure`,
    `memory     runs ${JSON.stringify(f.memory.memoryRuns)} · ${f.memory.summarizerOverlaps} overlapping succeeded summarizers (+${f.memory.summarizerOverlapsAfterLeaseLoss} after a lost lease) · ${f.memory.runsLeftRunning} left running · ${f.memory.unrequestedResets} unrequested resets · ${f.memory.carryOverLosses} carry-over losses · ${f.memoryRunsInterrupted} loads failed a dead replica's runs`,
    `delays     steer → model ${seconds(f.steerDelayMs.median)} median, ${seconds(f.steerDelayMs.max)} max · answer → thread ${seconds(f.answerDelayMs.median)} median, ${seconds(f.answerDelayMs.max)} max`,
    `answers    ${f.answersStored} stored · ${f.answersPostedOnce} posted exactly once · ${f.answerLosses} lost · ${f.answerDuplicates} duplicated · ${f.errorNotes} error notes`,
    `posts      ${f.duplicatePosts} duplicate posts · ${f.postsFoundOnRetry} retried posts found already sent`,
    `leftovers  ${f.leftovers.queuedSteers} queued · ${f.leftovers.outboxOpen} outbox open · ${f.outboxFailed} outbox failed · ${f.leftovers.leasesHeld} leases held · ${f.leftovers.unsettledSessions} unsettled sessions · ${awaiting} awaiting delivery`,
    `timing     start ${seconds(f.timings.startMs)} · traffic ${seconds(f.timings.trafficMs)} · settle ${seconds(f.timings.settleMs)}${f.settled ? '' : ' (NOT SETTLED)'} (last waited for: ${f.settleLastWait}) · stop ${seconds(f.timings.stopMs)} · total ${seconds(f.timings.totalMs)}`,
    `RESULT     ${run.ok ? 'OK' : 'FAILED'}: duplicates = ${run.duplicates}, losses = ${run.losses}, overlaps = ${run.overlaps}`,
    ...(run.problems.length ? ['problems:', ...run.problems.map((line) => `  - ${line}`)] : []),
    ...(run.warnings.length ? ['warnings:', ...run.warnings.map((line) => `  - ${line}`)] : []),
    `replica logs: ${run.logDir}`,
  ].join('\n');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
