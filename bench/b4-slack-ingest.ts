// B4 Slack ingest: signed Events API requests per second through the real HTTP receiver (Bolt's
// HTTPReceiver inside the real Slack adapter, mounted on Hippo's HttpServer) with the real agent
// (src/build-agent.ts) on a fresh Postgres database, every event stored as a durable steer row
// before its ack; compared in the same run with a bare Bolt app that only acks the same events.
//
// Three processes besides Postgres: this one (the measured server: HttpServer + Bolt + agent +
// outbox sender), the fake model server answering at once (bench/support/model-host.ts), and a load
// generator that also hosts the fake Slack Web API (this file again, forked with
// B4_LOAD_GENERATOR=1), so neither the client's nor the fakes' CPU runs on the measured event loop.
// The generator keeps `concurrency` requests in flight; a thread reply is sent only after its
// thread's mention was acked (a reply to a thread without a session is ignored chatter).
//
// Run alone: npx tsx bench/b4-slack-ingest.ts   (prints the report; BENCH_APPEND=1 also appends it
// to bench/history/ as bench/run.ts does)
// Knobs: BENCH_B4_EVENTS (3000), BENCH_B4_CONCURRENCY (32), BENCH_B4_RATE (0: closed loop; N: an
// open loop sending N events/s whatever the acks, as a burst from Slack does), BENCH_B4_DATABASE
// (postgres | pglite: the embedded default of a first run), BENCH_B4_MENTION_SHARE (0.25),
// BENCH_B4_WARMUP (200 events per server), BENCH_B4_DRAIN_S (120: how long to wait for the agent to
// take every stored steer after the ingest), BENCH_B4_LOG_LEVEL (info, written to a null sink).
import { createChatStorage } from '../src/adapters/storage/chat-storage.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { fork, type ChildProcess } from 'node:child_process';
import { Agent as HttpAgent, createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { App, HTTPReceiver } from '@slack/bolt';
import { boltLogger } from '../src/adapters/slack/bolt-logger.js';
import { startSlackAdapter } from '../src/adapters/slack/index.js';
import { slackEventsPath } from '../src/adapters/slack/app.js';
import { slackMessageKey } from '../src/adapters/slack/context.js';
import type { Database } from '../src/adapters/storage/database.js';
import { buildAgent } from '../src/build-agent.js';
import { parseConfig } from '../src/config.js';
import { HttpServer } from '../src/http-server.js';
import { createLogger, type Logger } from '../src/log.js';
import { signedHeaders, startFakeSlackApi } from '../test/fakes/fake-slack-api.js';
import { createPgliteBenchDatabase, createPostgresBenchDatabase, RoundTripCounter } from './support/bench-database.js';
import { closeChild, startModelHost } from './support/model-host.js';
import { readFile, mkdtemp } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { startScript, type RunningProcess } from '../test/support/processes.js';
import { printReport, repoRoot, appendResults, runEnvironment, type BenchReport, type Benchmark, type TargetCheck } from './support/report.js';
import { count, envNumber, fixed, percentile, sleep } from './support/stats.js';

// ---------------------------------------------------------------------------------------------
// Options and results

export interface B4Options {
  /** Measured events per server (BENCH_B4_EVENTS, default 3,000). */
  events?: number;
  /** Requests in flight (BENCH_B4_CONCURRENCY, default 32); with `rate`, the most in flight. */
  concurrency?: number;
  /** Events per second sent on a clock, acked or not (BENCH_B4_RATE; default 0 = closed loop). */
  rate?: number;
  /** Hippo's database (BENCH_B4_DATABASE, default postgres; pglite = the embedded one under a data dir). */
  database?: 'postgres' | 'pglite';
  /** Share of the events that are app_mentions starting a session; the rest are thread replies (default 0.25). */
  mentionShare?: number;
  /** Warm-up events per server before the measured ones (default 200). */
  warmup?: number;
  /** How long to wait after the ingest for the agent to take every stored steer (default 120 s; 0 = do not wait). */
  drainTimeoutMs?: number;
  /** Hippo's log level; lines go to a null sink, so the cost of formatting them is measured (default info). */
  logLevel?: string;
  /** The model's latency per call (default 0: answers at once). */
  modelMs?: number;
  /**
   * Counts the statements each request sends before its ack (AsyncLocalStorage around the route;
   * default off: its promise hooks slow every await down, and Prisma's batching loses the context
   * under concurrency, so use it with concurrency 1).
   */
  traceAckPath?: boolean;
  /**
   * Process layout (BENCH_B4_ROLES, a comma list run one after the other; default "all,ingest+worker"):
   * `all` = one process acks and runs the agent; `ingest+worker` (or `ingest+2workers`, …) = the
   * measured process is HIPPO_ROLE=ingest and real `src/main.ts` processes with HIPPO_ROLE=worker
   * run the sessions (Postgres only); `ingest+worker-after` (`ingest+Nworkers-after`) starts the
   * workers only once the last event was acked: a burst taken while the workers are away, or the
   * ingest as it acks when the workers run on machines of their own.
   */
  roles?: Layout;
}

/** `all`, or `ingest+worker`, `ingest+2workers`, `ingest+4workers`, …, each optionally `-after`. */
export type Layout = string;

/** Worker processes beside the measured one (0: it is an `all` process). */
function workersOf(layout: Layout): number {
  if (layout === 'all') return 0;
  const match = /^ingest\+(\d*)workers?(-after)?$/.exec(layout);
  if (!match) throw new Error(`BENCH_B4_ROLES: expected "all" or "ingest+worker" / "ingest+Nworkers" (optionally with "-after"), got "${layout}"`);
  return match[1] ? Number(match[1]) : 1;
}

/** Whether the workers start only after the ingest (`…-after`). */
function workersAfter(layout: Layout): boolean {
  return layout.endsWith('-after');
}

/** Latency percentiles of acks, in milliseconds. */
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** One server's measured run. */
export interface IngestStats {
  label: string;
  events: number;
  /** From the first request sent to the last ack received. */
  wallMs: number;
  eventsPerSecond: number;
  ack: LatencySummary;
  mentionAck: LatencySummary;
  replyAck: LatencySummary;
  /** Requests answered with anything but 200 (or not answered), with the first reasons. */
  failed: number;
  failures: string[];
  /** CPU time of the server process (this one) per event during the run. */
  serverCpuMsPerEvent: number;
  /** Event-loop delay of the server process during the run (monitorEventLoopDelay, 10 ms resolution). */
  lagP99Ms: number;
  lagMaxMs: number;
  /**
   * Ack latency inside the server process: the request's 'request' event to its response's
   * 'finish'. Against `ack`, the rest is the sockets, the run queue and the generator's own loop.
   */
  serverAck: LatencySummary;
}

/** Proof that every measured event became exactly one durable steer row. */
export interface RowCheck {
  expectedSteers: number;
  steerRows: number;
  distinctKeys: number;
  /** Expected message keys without a row. */
  missing: number;
  /** Rows whose key is not an expected one (warm-up excluded). */
  unexpected: number;
  expectedSessions: number;
  sessions: number;
  processedEvents: number;
  exactlyOnce: boolean;
}

export interface B4Result {
  settings: Required<B4Options>;
  bare: IngestStats;
  hippo: IngestStats & {
    /** Statements sent to Postgres during the measured window (ingest and agent), per event. */
    dbRoundTripsPerEvent: number;
    dbStatements: Array<[string, number]>;
    /** Statements sent while handling a request (before its ack), per event (NaN unless traced). */
    ackRoundTripsPerEvent: number;
    ackStatements: Array<[string, number]>;
    /** Outbox items sent to the fake Slack per second during the measured window. */
    outboxSentPerSecond: number;
    /** CPU of the worker processes per event, from the measured window's start until every steer was taken (NaN without workers). */
    workerCpuMsPerEvent: number;
    /** Transactions Postgres committed in the database per event over the same span, every process (pg_stat_database). */
    transactionsPerEvent: number;
  };
  /** Hippo ÷ bare Bolt: ack p50 and p99; bare ÷ Hippo: throughput (all "how many times worse"). */
  ratios: { p50: number; p99: number; throughput: number };
  rows: RowCheck;
  /** After the ingest: time until every steer was taken by a worker (NaN when it did not finish in time), model calls made. */
  drain: { steersTakenMs: number; queuedAtEnd: number; outboxPendingAtEnd: number; outboxSent: number };
  /** Web API calls the fake Slack received (auth.test, users.info, posts, reactions, …). */
  slackCalls: Record<string, number>;
  /** CPU time the load generator + fake Slack process used over the whole benchmark. */
  generatorCpuMs: number;
  /** The machine's 1-minute load average when the benchmark started (other processes compete for the CPU). */
  loadAtStart: number;
}

function optionsFromEnvironment(): Required<B4Options> {
  return {
    events: envNumber('BENCH_B4_EVENTS', 3_000),
    concurrency: envNumber('BENCH_B4_CONCURRENCY', 32),
    rate: envNumber('BENCH_B4_RATE', 0),
    database: process.env['BENCH_B4_DATABASE'] === 'pglite' ? 'pglite' : 'postgres',
    mentionShare: envNumber('BENCH_B4_MENTION_SHARE', 0.25),
    warmup: envNumber('BENCH_B4_WARMUP', 200),
    drainTimeoutMs: envNumber('BENCH_B4_DRAIN_S', 120) * 1000,
    logLevel: process.env['BENCH_B4_LOG_LEVEL'] ?? 'info',
    modelMs: envNumber('BENCH_B4_MODEL_MS', 0),
    traceAckPath: process.env['BENCH_B4_TRACE_ACK'] === '1',
    roles: layoutsFromEnvironment()[0] ?? 'all',
  };
}

function layoutsFromEnvironment(): Layout[] {
  const named = (process.env['BENCH_B4_ROLES'] ?? 'all,ingest+worker').split(',').map((name) => name.trim());
  for (const name of named) workersOf(name);
  return named;
}

// ---------------------------------------------------------------------------------------------
// The events

const signingSecret = 'b4-signing-secret';
const channels = Array.from({ length: 8 }, (_unused, index) => `CB4${String(index).padStart(4, '0')}`);
const users = Array.from({ length: 16 }, (_unused, index) => `UB4${String(index).padStart(4, '0')}`);

/** One request of the plan; a reply names the plan index of its thread's mention. */
interface PlannedEvent {
  kind: 'mention' | 'reply';
  body: string;
  /** For replies: the index of the mention whose ack releases it. */
  after?: number;
  /** The steer key the event's message has. */
  key: string;
}

interface Plan {
  events: PlannedEvent[];
  mentions: number;
}

/**
 * `total` events: mentions of Hippo at the top of a channel (each starts a session) and replies in
 * their threads, spread evenly over the threads. Event ids and message ts are unique per `prefix`.
 */
function planEvents(prefix: string, total: number, mentionShare: number, identity: SlackIdentity, ordinal: number): Plan {
  const threads = Math.max(1, Math.min(total, Math.round(total * mentionShare)));
  const replies = total - threads;
  const events: PlannedEvent[] = [];
  let message = 0;
  // ts are unique across plans: seconds per plan ordinal, the message number as microseconds.
  const tsOf = (n: number) => `${1_750_000_000 + ordinal * 10_000}.${String(n).padStart(6, '0')}`;
  const envelope = (event: Record<string, unknown>, n: number) =>
    JSON.stringify({ token: 'legacy', team_id: identity.teamId, api_app_id: 'AB4', type: 'event_callback', event_id: `Ev${prefix}${n}`, event_time: 1_750_000_000, event });
  const mentionIndex: number[] = [];
  for (let thread = 0; thread < threads; thread += 1) {
    const ts = tsOf(message);
    const channel = channels[thread % channels.length] ?? 'CB40000';
    const user = users[thread % users.length] ?? 'UB40000';
    mentionIndex.push(events.length);
    events.push({
      kind: 'mention',
      key: slackMessageKey(identity.teamId, channel, ts),
      body: envelope({ type: 'app_mention', user, text: `<@${identity.botUserId}> please look at ticket ${prefix}-${thread}`, ts, channel, event_ts: ts, channel_type: 'channel' }, message),
    });
    message += 1;
  }
  for (let reply = 0; reply < replies; reply += 1) {
    const thread = reply % threads;
    const mention = mentionIndex[thread] ?? 0;
    const threadTs = tsOf(thread);
    const ts = tsOf(message);
    const channel = channels[thread % channels.length] ?? 'CB40000';
    const user = users[(thread + 1 + reply) % users.length] ?? 'UB40000';
    events.push({
      kind: 'reply',
      after: mention,
      key: slackMessageKey(identity.teamId, channel, ts),
      body: envelope({ type: 'message', channel_type: 'channel', user, text: `reply ${reply} about ticket ${prefix}-${thread}: it still fails on step ${reply % 7}`, ts, thread_ts: threadTs, channel, event_ts: ts }, message),
    });
    message += 1;
  }
  return { events, mentions: threads };
}

// ---------------------------------------------------------------------------------------------
// The load generator process (also the fake Slack Web API)

interface SlackIdentity {
  apiUrl: string;
  teamId: string;
  botUserId: string;
  botId: string;
}

type ToGenerator =
  | { type: 'run'; id: number; url: string; events: PlannedEvent[]; load: Load }
  | { type: 'stats'; id: number }
  | { type: 'close' };

interface SendResult {
  /** Ack latency per plan index (ms); NaN when it failed. */
  latencies: number[];
  wallMs: number;
  failures: string[];
}

type FromGenerator =
  | { type: 'ready'; identity: SlackIdentity }
  | { type: 'ran'; id: number; result: SendResult }
  | { type: 'stats'; id: number; calls: Record<string, number>; cpuMs: number };

/** How the generator sends: `concurrency` in flight (closed loop), or `rate` events/s (open loop, at most `concurrency` in flight). */
interface Load {
  concurrency: number;
  rate: number;
}

/** Sends the plan with `concurrency` requests in flight; replies wait for their mention's ack. */
async function sendPlan(url: string, events: PlannedEvent[], load: Load): Promise<SendResult> {
  const { concurrency } = load;
  // With a timeout of its own, the agent closes an idle socket a second before the server's
  // announced Keep-Alive timeout (Node applies the hint only below the agent's timeout); without
  // one, an event sent as the server closes an idle socket fails with ECONNRESET.
  const agent = new HttpAgent({ keepAlive: true, maxSockets: concurrency, timeout: 120_000 });
  const latencies: number[] = events.map(() => Number.NaN);
  const failures: string[] = [];
  const mentions = events.flatMap((event, index) => (event.kind === 'mention' ? [index] : []));
  const repliesOf = new Map<number, number[]>();
  for (const [index, event] of events.entries()) {
    if (event.kind === 'reply' && event.after !== undefined) repliesOf.set(event.after, [...(repliesOf.get(event.after) ?? []), index]);
  }
  const replyShare = (events.length - mentions.length) / Math.max(1, events.length);
  const readyReplies: number[] = [];
  let replyHead = 0;
  let mentionHead = 0;
  let sent = 0;
  let sentReplies = 0;
  let waiters: Array<() => void> = [];
  const wakeAll = () => {
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };
  // Keeps the mix steady over the run: a ready reply goes out while replies are behind their share.
  const next = (): number | 'wait' | 'done' => {
    const replyReady = replyHead < readyReplies.length;
    const mentionLeft = mentionHead < mentions.length;
    if (replyReady && (!mentionLeft || sentReplies <= replyShare * sent)) {
      sentReplies += 1;
      return readyReplies[replyHead++] ?? 'done';
    }
    if (mentionLeft) return mentions[mentionHead++] ?? 'done';
    return sent < events.length ? 'wait' : 'done';
  };
  const post = (index: number): Promise<void> =>
    new Promise((resolve) => {
      const body = events[index]?.body ?? '';
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...signedHeaders(signingSecret, body) };
      const started = performance.now();
      const request = httpRequest(url, { method: 'POST', agent, headers, timeout: 30_000 }, (response) => {
        response.resume();
        response.on('end', () => {
          if (response.statusCode === 200) latencies[index] = performance.now() - started;
          else failures.push(`HTTP ${response.statusCode} for event ${index}`);
          resolve();
        });
      });
      request.on('timeout', () => request.destroy(new Error('no answer within 30 s')));
      request.on('error', (error) => {
        failures.push(`event ${index}: ${error.message}`);
        resolve();
      });
      request.end(body);
    });
  const worker = async () => {
    for (;;) {
      const index = next();
      if (index === 'done') return;
      if (index === 'wait') {
        await new Promise<void>((resolve) => waiters.push(resolve));
        continue;
      }
      sent += 1;
      await post(index);
      const released = repliesOf.get(index);
      if (released) {
        readyReplies.push(...released);
        wakeAll();
      }
    }
  };
  // Open loop: one event per tick of the clock, whatever is still in flight (up to the cap).
  const clocked = async () => {
    const inFlight = new Set<Promise<void>>();
    const interval = 1000 / load.rate;
    const begin = performance.now();
    for (let tick = 0; ; tick += 1) {
      const index = next();
      if (index === 'done') break;
      if (index !== 'wait') {
        sent += 1;
        const request = post(index).then(() => {
          inFlight.delete(request);
          const released = repliesOf.get(index);
          if (released) {
            readyReplies.push(...released);
            wakeAll();
          }
        });
        inFlight.add(request);
      } else if (inFlight.size > 0) {
        // Nothing ready yet (replies wait for their mention's ack): wait for an ack.
        await Promise.race(inFlight);
        tick -= 1;
        continue;
      }
      while (inFlight.size >= concurrency) await Promise.race(inFlight);
      const due = begin + (tick + 1) * interval - performance.now();
      if (due > 0) await sleep(due);
    }
    await Promise.all(inFlight);
  };
  const started = performance.now();
  if (load.rate > 0) await clocked();
  else await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - started;
  agent.destroy();
  return { latencies, wallMs, failures };
}

async function generatorMain(): Promise<void> {
  const slack = await startFakeSlackApi({ teamId: 'TB4BENCH', botUserId: 'UB4HIPPO', botId: 'BB4HIPPO' });
  for (const [index, id] of users.entries()) slack.addUser({ id, displayName: `Person ${index}` });
  const send = (message: FromGenerator) => process.send?.(message);
  process.on('message', (raw) => {
    const message = raw as ToGenerator;
    switch (message.type) {
      case 'run':
        void sendPlan(message.url, message.events, message.load).then((result) => send({ type: 'ran', id: message.id, result }));
        break;
      case 'stats': {
        const calls: Record<string, number> = {};
        for (const call of slack.calls) calls[call.method] = (calls[call.method] ?? 0) + 1;
        const cpu = process.cpuUsage();
        send({ type: 'stats', id: message.id, calls, cpuMs: (cpu.user + cpu.system) / 1000 });
        break;
      }
      case 'close':
        void slack.close().finally(() => process.exit(0));
        break;
    }
  });
  process.on('disconnect', () => void slack.close().finally(() => process.exit(0)));
  send({ type: 'ready', identity: { apiUrl: slack.apiUrl, teamId: slack.teamId, botUserId: slack.botUserId, botId: slack.botId } });
}

interface Generator {
  identity: SlackIdentity;
  send(url: string, events: PlannedEvent[], load: Load): Promise<SendResult>;
  stats(): Promise<{ calls: Record<string, number>; cpuMs: number }>;
  close(): Promise<void>;
}

async function startGenerator(): Promise<Generator> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    cwd: repoRoot,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, B4_LOAD_GENERATOR: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (message: FromGenerator) => void>();
  let nextId = 1;
  const identity = await new Promise<SlackIdentity>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`b4 load generator exited early (code ${code})`)));
    child.on('message', (raw) => {
      const message = raw as FromGenerator;
      if (message.type === 'ready') resolve(message.identity);
      else pending.get(message.id)?.(message);
    });
  });
  child.removeAllListeners('exit');
  const ask = <T extends FromGenerator>(message: { type: 'run'; url: string; events: PlannedEvent[]; load: Load } | { type: 'stats' }): Promise<T> =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, (reply) => {
        pending.delete(id);
        resolve(reply as T);
      });
      child.send({ ...message, id });
    });
  return {
    identity,
    send: async (url, events, load) => (await ask<Extract<FromGenerator, { type: 'ran' }>>({ type: 'run', url, events, load })).result,
    stats: async () => {
      const reply = await ask<Extract<FromGenerator, { type: 'stats' }>>({ type: 'stats' });
      return { calls: reply.calls, cpuMs: reply.cpuMs };
    },
    close: () => closeChild(child),
  };
}

// ---------------------------------------------------------------------------------------------
// Measuring a server

function summarize(samples: number[]): LatencySummary {
  const valid = samples.filter((value) => Number.isFinite(value));
  return {
    p50: percentile(valid, 50),
    p90: percentile(valid, 90),
    p99: percentile(valid, 99),
    max: valid.length ? Math.max(...valid) : Number.NaN,
    mean: valid.length ? valid.reduce((total, value) => total + value, 0) / valid.length : Number.NaN,
  };
}

/** Sends the warm-up plan, then the measured plan, timing this process's CPU and event loop. */
async function measure(label: string, generator: Generator, url: string, warmup: Plan, plan: Plan, load: Load): Promise<IngestStats> {
  if (warmup.events.length) {
    const warm = await generator.send(url, warmup.events, load);
    if (warm.failures.length) throw new Error(`${label}: warm-up failed: ${warm.failures.slice(0, 3).join('; ')}`);
  }
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  serverAcks.length = 0;
  const cpu = process.cpuUsage();
  const result = await generator.send(url, plan.events, load);
  const cpuUsed = process.cpuUsage(cpu);
  lag.disable();
  const serverAck = summarize(serverAcks.splice(0));
  const kinds = (kind: PlannedEvent['kind']) => result.latencies.filter((_value, index) => plan.events[index]?.kind === kind);
  const answered = result.latencies.filter((value) => Number.isFinite(value)).length;
  return {
    label,
    events: plan.events.length,
    wallMs: result.wallMs,
    eventsPerSecond: (answered * 1000) / result.wallMs,
    ack: summarize(result.latencies),
    mentionAck: summarize(kinds('mention')),
    replyAck: summarize(kinds('reply')),
    failed: plan.events.length - answered,
    failures: result.failures.slice(0, 5),
    serverCpuMsPerEvent: (cpuUsed.user + cpuUsed.system) / 1000 / plan.events.length,
    lagP99Ms: lag.percentile(99) / 1e6,
    lagMaxMs: lag.max / 1e6,
    serverAck,
  };
}

/** Acks timed inside this process (both servers run here), in ms; measure() reads and clears it. */
const serverAcks: number[] = [];

/** Times `response` from now until it has finished, into serverAcks. */
function timeAck(response: ServerResponse): void {
  const started = performance.now();
  response.once('finish', () => serverAcks.push(performance.now() - started));
}

/** A bare Bolt app on its own port: the same receiver settings as Hippo's, listeners that only ack. */
async function startBareBolt(identity: SlackIdentity, log: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const logger = boltLogger(log);
  const receiver = new HTTPReceiver({ signingSecret, endpoints: slackEventsPath, processBeforeResponse: true, logger });
  // botId and botUserId given and token verification off: Bolt never calls auth.test (and the
  // client is pointed at the fake Slack anyway, so nothing leaves 127.0.0.1).
  const app = new App({
    token: 'xoxb-b4-bare', botId: identity.botId, botUserId: identity.botUserId, tokenVerificationEnabled: false,
    receiver, logger, clientOptions: { slackApiUrl: identity.apiUrl },
  });
  app.event('app_mention', async () => undefined);
  app.event('message', async () => undefined);
  const server: Server = createServer((request, response) => {
    timeAck(response);
    receiver.requestListener(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${slackEventsPath}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// The database

/**
 * Set while Hippo handles a request: statements sent from it (or from work it started, such as an
 * event listener) before its response is finished count as the ack path's.
 */
const ackScope = new AsyncLocalStorage<{ open: boolean }>();

interface B4Database {
  /** Postgres only; unset for PGlite. */
  url?: string;
  database: Database;
  roundTrips: RoundTripCounter;
  /** Statements sent inside `ackScope` (while a request is being handled). */
  ackRoundTrips: RoundTripCounter;
  drop(): Promise<void>;
}

/** A new migrated database (bench/support/bench-database.ts) that also counts the ack path's statements. */
async function createDatabase(kind: 'postgres' | 'pglite'): Promise<B4Database> {
  const ackRoundTrips = new RoundTripCounter();
  const onStatement = (sql: string) => {
    if (ackScope.getStore()?.open) ackRoundTrips.record(sql);
  };
  const bench = kind === 'pglite' ? await createPgliteBenchDatabase({ onStatement }) : await createPostgresBenchDatabase({ onStatement });
  return { ...(bench.url ? { url: bench.url } : {}), database: bench.database, roundTrips: bench.roundTrips, ackRoundTrips, drop: () => bench.drop() };
}

// ---------------------------------------------------------------------------------------------
// The benchmark

async function checkRows(database: Database, expected: PlannedEvent[], warmup: PlannedEvent[], expectedSessions: number): Promise<RowCheck> {
  const rows = await database.prisma.steerMessage.findMany({ select: { platformMessageKey: true } });
  const keys = rows.map((row) => row.platformMessageKey);
  const distinct = new Set(keys);
  const warm = new Set(warmup.map((event) => event.key));
  const wanted = new Set(expected.map((event) => event.key));
  const missing = [...wanted].filter((key) => !distinct.has(key)).length;
  const unexpected = [...distinct].filter((key) => !wanted.has(key) && !warm.has(key)).length;
  const measuredRows = keys.filter((key) => wanted.has(key)).length;
  const sessions = await database.prisma.session.count({ where: { platform: 'slack', channelId: { in: channels } } });
  const processedEvents = await database.prisma.processedEvent.count();
  return {
    expectedSteers: wanted.size,
    steerRows: measuredRows,
    distinctKeys: [...distinct].filter((key) => wanted.has(key)).length,
    missing,
    unexpected,
    expectedSessions,
    sessions,
    processedEvents,
    exactlyOnce: missing === 0 && unexpected === 0 && measuredRows === wanted.size && keys.length === distinct.size && sessions === expectedSessions,
  };
}

/** Runs the bare Bolt baseline, then Hippo, on the same events; see the file comment. */
export async function runB4(options: B4Options = {}): Promise<B4Result> {
  const settings: Required<B4Options> = { ...optionsFromEnvironment(), ...options };
  const loadAtStart = loadavg()[0] ?? 0;
  const generator = await startGenerator();
  const { identity } = generator;
  // Warm-up threads live in channels of their own (excluded from the session count).
  const warmupPlan = (prefix: string, ordinal: number): Plan => {
    const plan = planEvents(prefix, settings.warmup, settings.mentionShare, identity, ordinal);
    for (const event of plan.events) event.body = event.body.replace(/"channel":"CB4/g, '"channel":"CW4');
    for (const event of plan.events) event.key = event.key.replace(':CB4', ':CW4');
    return plan;
  };
  const plan = planEvents('m', settings.events, settings.mentionShare, identity, 1);
  const load: Load = { concurrency: settings.concurrency, rate: settings.rate };
  const nullSink = { write: () => undefined };
  try {
    console.error(`b4: bare Bolt, ${count(settings.events)} events…`);
    const bareLog = createLogger(settings.logLevel, nullSink);
    const bareServer = await startBareBolt(identity, bareLog);
    let bare: IngestStats;
    try {
      bare = await measure('bare Bolt (acks only)', generator, bareServer.url, warmupPlan('wb', 2), plan, load);
    } finally {
      await bareServer.close();
    }

    console.error(`b4: Hippo (${settings.roles}), ${count(settings.events)} events…`);
    const workerCount = workersOf(settings.roles);
    const split = workerCount > 0;
    if (split && settings.database !== 'postgres') throw new Error('BENCH_B4_ROLES=ingest+worker needs Postgres (process roles share one database)');
    const model = await startModelHost({ kind: 'chat', delayMs: settings.modelMs }, { simulateCache: false });
    const database = await createDatabase(settings.database);
    try {
      const logFile = process.env['BENCH_B4_LOG_FILE'];
      const log = createLogger(settings.logLevel, logFile ? createWriteStream(logFile) : nullSink);
      const parsed = parseConfig({
        ...(database.url ? { DATABASE_URL: database.url } : {}), DATA_DIR: join(tmpdir(), 'hippo-b4-data'), LOG_LEVEL: settings.logLevel,
        OPENAI_API_KEY: 'bench-key', OPENAI_BASE_URL: model.url, MODEL: 'bench-model', MODEL_CONTEXT_WINDOW: '128000', TOOLS: 'memory',
        SLACK_BOT_TOKEN: 'xoxb-b4-bench', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: identity.apiUrl, HIPPO_ROLE: split ? 'ingest' : 'all',
      });
      if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
      const config = parsed.config;
      // As src/service.ts wires it: agent (sweeper on), HttpServer, Slack adapter on it.
      const built = await buildAgent({ config, database: database.database, log, environment: {} });
      if (!split) built.agent.runners.startSweeping();
      // The worker: the real service (npm start's entry) on the same database, fake model and fake Slack.
      const startWorkers = () => Promise.all(Array.from({ length: workerCount }, () => startWorker(database.url ?? '', model.url, identity.apiUrl, settings.logLevel)));
      const later = workersAfter(settings.roles);
      const workers = later ? [] : await startWorkers();
      const workersCpu = async () => (await Promise.all(workers.map((worker) => cpuMsOf(worker.child.pid)))).reduce((total, value) => total + value, 0);
      const commits = async () => Number((await database.database.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`)[0]?.n ?? Number.NaN);
      const http = new HttpServer(log);
      // Routes the adapter adds are timed (and, with traceAckPath, run inside ackScope): the
      // public route() wrapped, nothing else changed.
      const route = http.route.bind(http);
      http.route = (method, path, handler) =>
        route(method, path, (request, response) => {
          timeAck(response);
          if (!settings.traceAckPath) return handler(request, response);
          const scope = { open: true };
          response.once('finish', () => void (scope.open = false));
          return ackScope.run(scope, () => handler(request, response));
        });
      const adapter = await startSlackAdapter({ config, agent: built.agent, stores: built.stores, storage: createChatStorage(database.database.prisma, database.database.pool), http, log });
      const port = await http.listen(0, { host: '127.0.0.1' });
      const url = `http://127.0.0.1:${port}${slackEventsPath}`;
      let hippo: B4Result['hippo'];
      let rows: RowCheck;
      let drain: B4Result['drain'];
      const warm = warmupPlan('wh', 3);
      try {
        // Warm-up (JIT, Prisma, pool connections, user names cached), then a second for the agent
        // to catch up; round trips and outbox counts cover the measured window only.
        const warmOnly = await measure('warm-up', generator, url, { events: [], mentions: 0 }, warm, load);
        if (warmOnly.failed) throw new Error(`Hippo warm-up failed: ${warmOnly.failures.join('; ')}`);
        await sleep(1_000);
        database.roundTrips.reset();
        database.ackRoundTrips.reset();
        const outboxSent = () => database.database.prisma.outboxItem.count({ where: { status: 'sent' } });
        const sentBefore = await outboxSent();
        let workerCpuBefore = await workersCpu();
        const commitsBefore = settings.database === 'postgres' ? await commits() : Number.NaN;
        const stats = await measure(split ? 'Hippo ingest (durable rows)' : 'Hippo (durable rows)', generator, url, { events: [], mentions: 0 }, plan, load);
        const sentDuring = (await outboxSent()) - sentBefore;
        hippo = {
          ...stats,
          dbRoundTripsPerEvent: database.roundTrips.total / settings.events,
          dbStatements: database.roundTrips.top(8),
          ackRoundTripsPerEvent: settings.traceAckPath ? database.ackRoundTrips.total / settings.events : Number.NaN,
          ackStatements: database.ackRoundTrips.top(14),
          outboxSentPerSecond: (sentDuring * 1000) / stats.wallMs,
          workerCpuMsPerEvent: Number.NaN,
          transactionsPerEvent: Number.NaN,
        };
        const ingestEnded = performance.now();
        if (later) {
          workers.push(...(await startWorkers()));
          workerCpuBefore = await workersCpu();
        }
        rows = await checkRows(database.database, plan.events, warm.events, plan.mentions);
        const queued = () => database.database.prisma.steerMessage.count({ where: { status: 'queued' } });
        let steersTakenMs = Number.NaN;
        const deadline = Date.now() + settings.drainTimeoutMs;
        for (;;) {
          if ((await queued()) === 0) {
            steersTakenMs = performance.now() - ingestEnded;
            break;
          }
          if (Date.now() > deadline) break;
          await sleep(250);
        }
        if (split) hippo.workerCpuMsPerEvent = ((await workersCpu()) - workerCpuBefore) / settings.events;
        // Statistics reach pg_stat_database within a second of each backend's commits.
        await sleep(1_500);
        if (settings.database === 'postgres') hippo.transactionsPerEvent = ((await commits()) - commitsBefore) / settings.events;
        drain = {
          steersTakenMs,
          queuedAtEnd: await queued(),
          outboxPendingAtEnd: await database.database.prisma.outboxItem.count({ where: { status: { in: ['pending', 'sending'] } } }),
          outboxSent: await database.database.prisma.outboxItem.count({ where: { status: 'sent' } }),
        };
      } finally {
        // As the service stops: no new requests, sessions reach a checkpoint, then the outbox sender stops.
        await http.close();
        for (const worker of workers) worker.kill('SIGTERM');
        await Promise.all(workers.map((worker) => worker.exited));
        await built.agent.stop(20_000);
        await adapter.stop();
        await built.close();
      }
      const slack = await generator.stats();
      return {
        settings,
        bare,
        hippo,
        ratios: { p50: hippo.ack.p50 / bare.ack.p50, p99: hippo.ack.p99 / bare.ack.p99, throughput: bare.eventsPerSecond / hippo.eventsPerSecond },
        rows,
        drain,
        slackCalls: slack.calls,
        generatorCpuMs: slack.cpuMs,
        loadAtStart,
      };
    } finally {
      await database.drop();
      await model.close();
    }
  } finally {
    await generator.close();
  }
}

/** The worker's nice value in the ingest+worker layout (BENCH_B4_WORKER_NICE, default 10). */
const workerNice = envNumber('BENCH_B4_WORKER_NICE', 10);

/** Starts `src/main.ts` as HIPPO_ROLE=worker and waits until it serves. */
async function startWorker(databaseUrl: string, modelUrl: string, slackApiUrl: string, logLevel: string): Promise<RunningProcess> {
  const worker = startScript('src/main.ts', {
    DATABASE_URL: databaseUrl, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-b4-worker-')), PORT: '0', HIPPO_ROLE: 'worker', LOG_LEVEL: logLevel === 'silent' ? 'warn' : logLevel,
    OPENAI_API_KEY: 'bench-key', OPENAI_BASE_URL: modelUrl, MODEL: 'bench-model', MODEL_CONTEXT_WINDOW: '128000', TOOLS: 'memory',
    SLACK_BOT_TOKEN: 'xoxb-b4-bench', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: slackApiUrl,
  }, [], { nodeOptions: ['--max-old-space-size=1536'] });
  // Acks are what Slack times; a turn may wait. On one machine the worker yields the CPU to the
  // ingest (in production they run on machines of their own).
  if (worker.child.pid !== undefined) setPriority(worker.child.pid, workerNice);
  try {
    await worker.waitForLog(/^service-started/, 60_000);
  } catch (error) {
    worker.kill('SIGKILL');
    throw new Error(`b4 worker did not start: ${String(error)}\n${worker.stderr().slice(-2_000)}`);
  }
  return worker;
}

/** CPU time (user + system) a process has used, in ms, from /proc (Linux). */
async function cpuMsOf(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const stat = await readFile(`/proc/${String(pid)}/stat`, 'utf8').catch(() => '');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** The result as a report for bench/run.ts. */
export function b4Report(result: B4Result): BenchReport {
  const { settings, bare, hippo, ratios, rows, drain } = result;
  const latencyRow = (stats: IngestStats, which: 'ack' | 'mentionAck' | 'replyAck' | 'serverAck', label: string) => {
    const summary = stats[which];
    return [label, fixed(summary.p50, 2), fixed(summary.p90, 2), fixed(summary.p99, 2), fixed(summary.max, 1), fixed(summary.mean, 2)];
  };
  const targets: TargetCheck[] = [
    { target: "every ack within Slack's 3 s", measured: `max ${fixed(hippo.ack.max, 0)} ms, p99 ${fixed(hippo.ack.p99, 0)} ms`, met: hippo.ack.max < 3_000 && hippo.failed === 0 },
    { target: 'ack p99 < 50 ms', measured: `${fixed(hippo.ack.p99, 1)} ms (p50 ${fixed(hippo.ack.p50, 1)} ms)`, met: hippo.ack.p99 < 50 },
    { target: '≥ 500 events/s into durable rows', measured: `${fixed(hippo.eventsPerSecond, 0)} events/s`, met: hippo.eventsPerSecond >= 500 },
    { target: 'ack p50 ≤ 1.5 × bare Bolt', measured: `${fixed(ratios.p50, 2)} × (${fixed(hippo.ack.p50, 1)} vs ${fixed(bare.ack.p50, 1)} ms)`, met: ratios.p50 <= 1.5 },
    { target: 'ack p99 ≤ 1.5 × bare Bolt', measured: `${fixed(ratios.p99, 2)} × (${fixed(hippo.ack.p99, 1)} vs ${fixed(bare.ack.p99, 1)} ms)`, met: ratios.p99 <= 1.5 },
    { target: 'throughput ≥ bare Bolt ÷ 1.5', measured: `bare ÷ Hippo = ${fixed(ratios.throughput, 2)} (${fixed(bare.eventsPerSecond, 0)} vs ${fixed(hippo.eventsPerSecond, 0)} events/s)`, met: ratios.throughput <= 1.5 },
    {
      target: 'every event one durable steer row, exactly once',
      measured: `${count(rows.steerRows)} rows for ${count(rows.expectedSteers)} events (${rows.missing} missing, ${rows.unexpected} unexpected), ${count(rows.sessions)} of ${count(rows.expectedSessions)} sessions; ${hippo.failed + bare.failed} requests not acked 200`,
      met: rows.exactlyOnce && hippo.failed === 0 && bare.failed === 0,
    },
  ];
  const calls = Object.entries(result.slackCalls).sort((left, right) => right[1] - left[1]).map(([method, times]) => `${method} ${count(times)}`).join(', ');
  return {
    id: 'b4',
    title: 'Slack ingest: signed events through the HTTP receiver into durable rows',
    settings: {
      events: settings.events, concurrency: settings.concurrency, 'mention share': settings.mentionShare, 'warm-up events': settings.warmup,
      'log level': `${settings.logLevel} (null sink)`, 'model ms per call': settings.modelMs,
      database: settings.database === 'pglite' ? 'PGlite (embedded, as with no DATABASE_URL)' : 'Postgres (durable), pool as in src/adapters/storage/database.ts',
      load: settings.rate > 0 ? `open loop: ${settings.rate} events/s (at most ${settings.concurrency} in flight)` : `closed loop: ${settings.concurrency} in flight`,
      'load average at start': fixed(result.loadAtStart, 2),
      roles: settings.roles,
    },
    tables: [
      {
        title: 'Throughput and cost of the server process',
        columns: ['server', 'events', 'failed', 'wall s', 'events/s', 'CPU ms / event', 'loop lag p99 ms', 'loop lag max ms', 'DB round trips / event'],
        rows: [
          [bare.label, bare.events, bare.failed, fixed(bare.wallMs / 1000, 2), fixed(bare.eventsPerSecond, 0), fixed(bare.serverCpuMsPerEvent, 2), fixed(bare.lagP99Ms, 1), fixed(bare.lagMaxMs, 0), '–'],
          [hippo.label, hippo.events, hippo.failed, fixed(hippo.wallMs / 1000, 2), fixed(hippo.eventsPerSecond, 0), fixed(hippo.serverCpuMsPerEvent, 2), fixed(hippo.lagP99Ms, 1), fixed(hippo.lagMaxMs, 0), settings.traceAckPath ? `${fixed(hippo.dbRoundTripsPerEvent, 1)} (ack path ${fixed(hippo.ackRoundTripsPerEvent, 1)})` : fixed(hippo.dbRoundTripsPerEvent, 1)],
          ['Hippo ÷ bare', '', '', '', `÷ ${fixed(ratios.throughput, 2)}`, `× ${fixed(hippo.serverCpuMsPerEvent / bare.serverCpuMsPerEvent, 1)}`, '', '', ''],
        ],
      },
      {
        title: 'Ack latency, ms (request sent → 200 received, at the client)',
        columns: ['server / events', 'p50', 'p90', 'p99', 'max', 'mean'],
        rows: [
          latencyRow(bare, 'ack', 'bare Bolt, all'),
          latencyRow(hippo, 'ack', 'Hippo, all'),
          latencyRow(hippo, 'mentionAck', 'Hippo, mentions (new session)'),
          latencyRow(hippo, 'replyAck', 'Hippo, thread replies (steer)'),
          latencyRow(bare, 'serverAck', 'bare Bolt, inside the server'),
          latencyRow(hippo, 'serverAck', 'Hippo, inside the server'),
          ['Hippo ÷ bare, all', `× ${fixed(ratios.p50, 2)}`, `× ${fixed(hippo.ack.p90 / bare.ack.p90, 2)}`, `× ${fixed(ratios.p99, 2)}`, '', ''],
        ],
      },
      {
        title: 'Durable rows and what followed the ingest',
        columns: ['check', 'value'],
        rows: [
          ['steer rows / events', `${count(rows.steerRows)} / ${count(rows.expectedSteers)} (distinct keys ${count(rows.distinctKeys)})`],
          ['sessions / mentions', `${count(rows.sessions)} / ${count(rows.expectedSessions)}`],
          ['processed event ids (incl. warm-up)', count(rows.processedEvents)],
          ['every steer taken by a worker after', Number.isFinite(drain.steersTakenMs) ? `${fixed(drain.steersTakenMs / 1000, 1)} s` : `not within ${fixed(settings.drainTimeoutMs / 1000, 0)} s (${drain.queuedAtEnd} queued)`],
          ['outbox items sent during the ingest', `${fixed(hippo.outboxSentPerSecond, 0)} / s`],
          ...(Number.isFinite(hippo.workerCpuMsPerEvent) ? [['worker processes CPU, measured window until every steer was taken', `${fixed(hippo.workerCpuMsPerEvent, 2)} ms / event`]] : []),
          ...(Number.isFinite(hippo.transactionsPerEvent) ? [['transactions committed in the database, same span, every process', `${fixed(hippo.transactionsPerEvent, 1)} / event`]] : []),
          ['outbox sent / pending at the end', `${count(drain.outboxSent)} / ${count(drain.outboxPendingAtEnd)}`],
        ],
      },
    ],
    targets,
    summaryLines: [
      `B4 summary: roles=${settings.roles} events_per_s=${fixed(hippo.eventsPerSecond, 0)} ack_p50_ms=${fixed(hippo.ack.p50, 1)} ack_p99_ms=${fixed(hippo.ack.p99, 1)} `
      + `exactly_once=${rows.exactlyOnce && hippo.failed === 0 ? 'yes' : 'no'}`,
    ],
    notes: [
      `Both servers get the same ${count(settings.events)} signed events (distinct event ids; ${count(rows.expectedSessions)} app_mentions at the top of 8 channels, each a new session, and thread replies spread over their threads, each a steer), after ${settings.warmup} warm-up events each. A reply is sent only after its thread's mention was acked.`,
      'The bare Bolt app uses the same HTTPReceiver settings as Hippo (processBeforeResponse, signature check) with listeners that only return. Hippo acks after the steer row and the processed event id are committed; ' + (workersAfter(settings.roles)
        ? 'the workers start only after the last ack (a burst while they are away, or on machines of their own): the ingest acks with the whole machine but Postgres and the load generator, and its outbox sends the 👀 of steers waiting longer than a second; the drain row shows how long the workers then took.'
        : 'the agent runs the sessions (model answering at once, in its own process) and the outbox posts to the fake Slack while the ingest goes on.'),
      settings.rate > 0
        ? `The load is an open loop of ${settings.rate} events/s: events go out on the clock whether or not earlier ones were acked (as Slack delivers a burst), so a slow ack shows as latency, not as a slower sender. Slack wants each ack within 3 s.`
        : `The load is a closed loop of ${settings.concurrency} requests in flight, so ack latency ≈ ${settings.concurrency} ÷ throughput once the server is the bottleneck (a p99 under 50 ms needs well over ${count((settings.concurrency * 1000) / 50)} events/s).`,
      `Load generator and fake Slack Web API run in a child process (${fixed(result.generatorCpuMs / 1000, 1)} s CPU); the model in another. Slack Web API calls seen: ${calls}.`,
      ...(settings.traceAckPath
        ? [`Statements on the ack path (sent while a request was open, by it or by work it started), per event: ${hippo.ackStatements.map(([sql, times]) => `${sql} ${fixed(times / settings.events, 2)}`).join('; ')}.`]
        : []),
      `Top statements during Hippo's measured window (ingest and agent): ${hippo.dbStatements.map(([sql, times]) => `${sql} ×${count(times)}`).join('; ')}.`,
      ...[...bare.failures, ...hippo.failures].map((failure) => `FAILED: ${failure}`),
    ],
  };
}

export const b4: Benchmark = {
  id: 'b4',
  title: 'Slack ingest',
  // One report: each layout's tables, targets and summary line one after the other.
  run: async () => {
    const reports: BenchReport[] = [];
    for (const roles of layoutsFromEnvironment()) reports.push(b4Report(await runB4({ roles })));
    const [first, ...rest] = reports;
    if (!first) throw new Error('BENCH_B4_ROLES names no layout');
    const label = (report: BenchReport) => String(report.settings['roles'] ?? '');
    return {
      ...first,
      settings: { ...first.settings, roles: reports.map(label).join(', then ') },
      tables: reports.flatMap((report) => report.tables.map((table) => ({ ...table, title: `${table.title} (roles=${label(report)})` }))),
      targets: reports.flatMap((report) => report.targets.map((target) => ({ ...target, target: `roles=${label(report)}: ${target.target}` }))),
      summaryLines: reports.flatMap((report) => report.summaryLines ?? []),
      notes: [first.notes, ...rest.map((report) => report.notes.slice(-2))].flat(),
    };
  },
};

if (process.env['B4_LOAD_GENERATOR'] === '1') {
  await generatorMain();
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const environment = runEnvironment();
    const report = await b4.run();
    printReport(report);
    if (process.env['BENCH_APPEND'] === '1') await appendResults([report], environment);
    process.exit(0);
  } catch (error) {
    console.error(error);
    process.exit(1);
  }
}
