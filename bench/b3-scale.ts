// B3 scale: many concurrent sessions in one process against a model that takes 200 ms per call.
// Each session sends a few messages in turn; each message gets one tool step and an answer (two
// model calls). Measures throughput, event-loop lag (perf_hooks.monitorEventLoopDelay) and memory
// per session (heap and RSS growth with every session's runner loaded, after a full GC).
// Scale-out (BENCH_B3_PROCESSES=1,2,4): the same load over N worker processes on one Postgres
// (support/b3-replica.ts), CPU and round trips per turn summed over them.
// Run alone: npx tsx bench/b3-scale.ts
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { backendCpuMs, backendCpuSince, createPostgresBenchDatabase } from './support/bench-database.js';
import { driveSessions } from './support/b3-drive.js';
import type { ReplicaMessage, ReplicaReport, ReplicaTask } from './support/b3-replica.js';
import { newThread, startChatAgent } from './support/chat-agent.js';
import { startModelHost, type ModelHost } from './support/model-host.js';
import { isMain, repoRoot, runAlone, type BenchReport, type Benchmark, type TargetCheck } from './support/report.js';
import { count, envNumber, envNumbers, fixed, percentile, sleep } from './support/stats.js';

interface B3Settings {
  /** BENCH_B3_SESSIONS: session counts to run, comma-separated. */
  sessionCounts: number[];
  /** BENCH_B3_TURNS: messages per session. */
  turns: number;
  /** BENCH_B3_MODEL_MS: model latency per call. */
  modelMs: number;
  /** BENCH_B3_RAMP_MS: first messages are spread evenly over this long (events arrive one by one). */
  rampMs: number;
  /** BENCH_B3_PROCESSES: worker process counts of the scale-out runs (none by default). */
  processCounts: number[];
  /** BENCH_B3_SCALEOUT_SESSIONS: sessions of each scale-out run, shared among its processes. */
  scaleOutSessions: number;
}

function settingsFromEnvironment(): B3Settings {
  return {
    sessionCounts: envNumbers('BENCH_B3_SESSIONS', [100, 1_000]),
    turns: envNumber('BENCH_B3_TURNS', 3),
    modelMs: envNumber('BENCH_B3_MODEL_MS', 200),
    rampMs: envNumber('BENCH_B3_RAMP_MS', 1_000),
    processCounts: envNumbers('BENCH_B3_PROCESSES', []),
    scaleOutSessions: envNumber('BENCH_B3_SCALEOUT_SESSIONS', 1_000),
  };
}

// A full GC before memory readings: expose gc() at run time (no node flag needed).
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

function memory(): { heapMb: number; rssMb: number } {
  collectGarbage();
  collectGarbage();
  const usage = process.memoryUsage();
  return { heapMb: usage.heapUsed / 2 ** 20, rssMb: usage.rss / 2 ** 20 };
}

interface ScaleResult {
  sessions: number;
  turns: number;
  modelCalls: number;
  wallMs: number;
  turnLatency: number[];
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  heapPerSessionKb: number;
  rssPerSessionKb: number;
  peakRssMb: number;
  /** V8's heap at the peak RSS sample: in use, and reserved. */
  peakHeapUsedMb: number;
  peakHeapTotalMb: number;
  roundTripsPerTurn: number;
  /** The most sent statements, per turn. */
  statementsPerTurn: Array<[string, number]>;
  cpuMsPerTurn: number;
  /** CPU per turn outside the agent: the model process, and Postgres's backends of this database. */
  modelCpuMsPerTurn: number;
  postgresCpuMsPerTurn: number;
  failedTurns: number;
  /** Session runners loaded at the end (sessions whose creation failed have none). */
  runners: number;
  /** Failure messages (first 90 characters) and how often each occurred. */
  failures: Map<string, number>;
}

async function runScale(sessions: number, settings: B3Settings, model: ModelHost): Promise<ScaleResult> {
  const database = await createPostgresBenchDatabase();
  try {
    const agent = await startChatAgent(database, model, { sweep: true });
    try {
      // Warm-up outside the measurement (JIT, Prisma plans, pool connections), one at a time.
      for (let index = 0; index < 10; index += 1) await agent.turn(newThread(), 1, 1);
      const before = memory();
      database.roundTrips.reset();
      const callsBefore = agent.recorder.calls.length;
      // Peak RSS, and where it was: V8's heap (used and reserved) and what lives outside it.
      let peak = process.memoryUsage();
      const sampler = setInterval(() => {
        const usage = process.memoryUsage();
        if (usage.rss > peak.rss) peak = usage;
      }, 100);
      const lag = monitorEventLoopDelay({ resolution: 10 });
      const [modelBefore, postgresBefore] = await Promise.all([model.stats(), backendCpuMs(database.url)]);
      lag.enable();
      const cpu = process.cpuUsage();
      const { turnLatency, failedTurns, failures, sessionIds, wallMs } = await driveSessions(agent, sessions, settings);
      const cpuUsed = process.cpuUsage(cpu);
      const [modelAfter, postgresAfter] = await Promise.all([model.stats(), backendCpuMs(database.url)]);
      lag.disable();
      clearInterval(sampler);
      // Let the drives finish their last checkpoint and release their leases; runners stay loaded.
      // (By the ids the turns returned: a lookup here would count as the sessions' statements.)
      await Promise.all([...sessionIds].map(async (sessionId) => (await agent.harness.agent.runner(sessionId)).whenIdle()));
      await sleep(200);
      const after = memory();
      const runners = Math.max(1, agent.harness.agent.runners.size - 10); // minus the warm-up's
      const turns = sessions * settings.turns;
      return {
        sessions,
        turns,
        modelCalls: agent.recorder.calls.length - callsBefore,
        wallMs,
        turnLatency,
        lagP50Ms: lag.percentile(50) / 1e6,
        lagP99Ms: lag.percentile(99) / 1e6,
        lagMaxMs: lag.max / 1e6,
        heapPerSessionKb: ((after.heapMb - before.heapMb) * 1024) / runners,
        rssPerSessionKb: ((after.rssMb - before.rssMb) * 1024) / runners,
        runners,
        peakRssMb: peak.rss / 2 ** 20,
        peakHeapUsedMb: peak.heapUsed / 2 ** 20,
        peakHeapTotalMb: peak.heapTotal / 2 ** 20,
        roundTripsPerTurn: database.roundTrips.total / turns,
        statementsPerTurn: database.roundTrips.top(process.env["BENCH_STATEMENT_SOURCES"] === "1" ? 40 : 10).map(([sql, times]): [string, number] => [sql, times / turns]),
        cpuMsPerTurn: (cpuUsed.user + cpuUsed.system) / 1000 / turns,
        modelCpuMsPerTurn: (modelAfter.cpuMs - modelBefore.cpuMs) / turns,
        postgresCpuMsPerTurn: backendCpuSince(postgresBefore, postgresAfter) / turns,
        failedTurns,
        failures,
      };
    } finally {
      await agent.close();
    }
  } finally {
    await database.drop();
  }
}

interface ScaleOutResult {
  processes: number;
  sessions: number;
  turns: number;
  failedTurns: number;
  /** Failure messages over all processes and how often each occurred. */
  failures: Map<string, number>;
  /** Turns answered by another process than the one that sent them (a sweeper's take-over). */
  answeredElsewhere: number;
  wallMs: number;
  turnLatency: number[];
  cpuMsPerTurn: number;
  roundTripsPerTurn: number;
  peakRssMb: number;
}

/**
 * `processes` worker processes on one Postgres, the sessions shared among them (each process sends
 * its own sessions' messages, as a load balancer would spread them), all started together.
 */
async function runScaleOut(processes: number, settings: B3Settings, model: ModelHost): Promise<ScaleOutResult> {
  const database = await createPostgresBenchDatabase();
  const children: ChildProcess[] = [];
  try {
    const share = Math.floor(settings.scaleOutSessions / processes);
    const reports = await new Promise<ReplicaReport[]>((resolve, reject) => {
      const done: ReplicaReport[] = [];
      let ready = 0;
      for (let index = 0; index < processes; index += 1) {
        const task: ReplicaTask = { url: database.url, modelUrl: model.url, sessions: share, turns: settings.turns, rampMs: settings.rampMs };
        const child = fork(fileURLToPath(new URL('./support/b3-replica.ts', import.meta.url)), [JSON.stringify(task)], {
          cwd: repoRoot,
          execArgv: ['--import', 'tsx'],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        });
        children.push(child);
        child.once('exit', (code) => {
          if (done.length < processes) reject(new Error(`a B3 worker process exited early (code ${code})`));
        });
        child.on('message', (raw) => {
          const message = raw as ReplicaMessage;
          if (message.type === 'ready' && ++ready === processes) for (const each of children) each.send({ type: 'go' });
          if (message.type === 'done' && done.push(message.report) === processes) resolve(done);
          // An answer this process gave to a session another process sent the message of (after a
          // sweeper's take-over): the sender, named by its thread key's pid, is told.
          if (message.type === 'answer') children.find((each) => message.threadKey.endsWith(`-p${each.pid}`))?.send(message);
        });
      }
    });
    const turns = reports.reduce((sum, report) => sum + report.turns, 0);
    return {
      processes,
      sessions: share * processes,
      turns,
      failedTurns: reports.reduce((sum, report) => sum + report.failedTurns, 0),
      failures: new Map(reports.flatMap((report) => report.failures)),
      answeredElsewhere: reports.reduce((sum, report) => sum + report.answeredElsewhere, 0),
      wallMs: Math.max(...reports.map((report) => report.wallMs)),
      turnLatency: reports.flatMap((report) => report.turnLatency),
      cpuMsPerTurn: reports.reduce((sum, report) => sum + report.cpuMs, 0) / turns,
      roundTripsPerTurn: reports.reduce((sum, report) => sum + report.roundTrips, 0) / turns,
      peakRssMb: Math.max(...reports.map((report) => report.peakRssMb)),
    };
  } finally {
    await Promise.all(children.map((child) => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.removeAllListeners('exit');
      child.once('exit', () => resolve());
      child.send({ type: 'exit' });
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    })));
    await database.drop();
  }
}

async function runB3(): Promise<BenchReport> {
  const settings = settingsFromEnvironment();
  const scenario = { kind: 'chat' as const, delayMs: settings.modelMs };
  const model = await startModelHost(scenario, { simulateCache: false });
  const results: ScaleResult[] = [];
  const scaleOut: ScaleOutResult[] = [];
  try {
    for (const sessions of settings.sessionCounts) {
      console.error(`b3: ${sessions} sessions…`);
      await model.configure(scenario);
      results.push(await runScale(sessions, settings, model));
    }
    for (const processes of settings.processCounts) {
      console.error(`b3: ${settings.scaleOutSessions} sessions over ${processes} worker process(es)…`);
      await model.configure(scenario);
      scaleOut.push(await runScaleOut(processes, settings, model));
    }
  } finally {
    await model.close();
  }
  const lowerBound = 2 * settings.modelMs;
  const failureNotes = [
    ...results.flatMap((result) => [...result.failures].map(([message, times]) => `FAILED turns with ${result.sessions} sessions: ${times}× "${message}"`)),
    ...scaleOut.flatMap((result) => [...result.failures].map(([message, times]) => `FAILED turns over ${result.processes} processes: ${times}× "${message}"`)),
  ];
  const largest = results.at(-1);
  const targets: TargetCheck[] = [];
  const thousand = results.find((result) => result.sessions >= 1_000);
  if (thousand) {
    targets.push({
      target: '1,000 sessions with event-loop lag p99 < 50 ms',
      measured: `${fixed(thousand.lagP99Ms, 1)} ms (max ${fixed(thousand.lagMaxMs, 0)} ms)${thousand.failedTurns ? `; ${thousand.failedTurns} of ${thousand.turns} turns failed` : ''}`,
      met: thousand.lagP99Ms < 50 && thousand.failedTurns === 0,
    });
  }
  return {
    id: 'b3',
    title: 'scale: concurrent sessions in one process',
    settings: { 'turns per session': settings.turns, 'model ms per call': settings.modelMs, 'model calls per turn': 2, 'first messages spread over ms': settings.rampMs, database: 'Postgres (durable), pool and transaction options as in src/adapters/storage/database.ts' },
    tables: [
      {
        title: `Throughput and latency (a turn = message → tool step → answer; ≥ ${lowerBound} ms of model time)`,
        columns: ['sessions', 'turns sent', 'failed', 'wall s', 'answered turns/s', 'model calls/s', 'turn p50 ms', 'turn p99 ms', 'agent CPU ms / turn', 'DB round trips / turn', 'CPU ms / turn: model process · Postgres'],
        rows: results.map((result) => [
          result.sessions,
          result.turns,
          result.failedTurns,
          fixed(result.wallMs / 1000, 1),
          fixed(((result.turns - result.failedTurns) * 1000) / result.wallMs, 1),
          fixed((result.modelCalls * 1000) / result.wallMs, 1),
          fixed(percentile(result.turnLatency, 50), 0),
          fixed(percentile(result.turnLatency, 99), 0),
          fixed(result.cpuMsPerTurn, 1),
          fixed(result.roundTripsPerTurn, 1),
          `${fixed(result.modelCpuMsPerTurn, 1)} · ${fixed(result.postgresCpuMsPerTurn, 1)}`,
        ]),
      },
      {
        title: 'Event loop and memory',
        columns: ['sessions', 'runners loaded', 'lag p50 ms', 'lag p99 ms', 'lag max ms', 'heap / session KB', 'RSS / session KB', 'peak RSS MB', 'at peak: heap used / reserved MB'],
        rows: results.map((result) => [
          result.sessions,
          result.runners,
          fixed(result.lagP50Ms, 1),
          fixed(result.lagP99Ms, 1),
          fixed(result.lagMaxMs, 0),
          fixed(result.heapPerSessionKb, 1),
          fixed(result.rssPerSessionKb, 1),
          count(result.peakRssMb),
          `${count(result.peakHeapUsedMb)} / ${count(result.peakHeapTotalMb)}`,
        ]),
      },
      ...(scaleOut.length === 0 ? [] : [{
        title: 'Scale-out: worker processes on one Postgres, the sessions shared among them (CPU and round trips summed over the processes)',
        columns: ['processes', 'sessions', 'turns sent', 'failed', 'answered by another process', 'wall s', 'answered turns/s', 'turn p50 ms', 'turn p99 ms', 'CPU ms / turn', 'DB round trips / turn', 'peak RSS MB (largest process)'],
        rows: scaleOut.map((result) => [
          result.processes,
          count(result.sessions),
          count(result.turns),
          result.failedTurns,
          result.answeredElsewhere,
          fixed(result.wallMs / 1000, 1),
          fixed(((result.turns - result.failedTurns) * 1000) / result.wallMs, 1),
          count(percentile(result.turnLatency, 50)),
          count(percentile(result.turnLatency, 99)),
          fixed(result.cpuMsPerTurn, 1),
          fixed(result.roundTripsPerTurn, 1),
          count(result.peakRssMb),
        ]),
      }]),
    ],
    targets,
    summaryLines: results.map((result) =>
      `B3 summary: sessions=${result.sessions} lag_p99_ms=${fixed(result.lagP99Ms, 1)} peak_rss_mb=${Math.round(result.peakRssMb)} `
      + `cpu_ms_per_turn=${fixed(result.cpuMsPerTurn, 1)} db_round_trips_per_turn=${fixed(result.roundTripsPerTurn, 1)} `
      + `turns_per_s=${fixed(((result.turns - result.failedTurns) * 1000) / result.wallMs, 1)} failed=${result.failedTurns}`).concat(
      scaleOut.map((result) =>
        `B3 summary: sessions=${result.sessions} processes=${result.processes} cpu_ms_per_turn=${fixed(result.cpuMsPerTurn, 1)} `
        + `db_round_trips_per_turn=${fixed(result.roundTripsPerTurn, 1)} turns_per_s=${fixed(((result.turns - result.failedTurns) * 1000) / result.wallMs, 1)} failed=${result.failedTurns}`)),
    notes: [
      ...failureNotes,
      'Sessions send their first message within the first BENCH_B3_RAMP_MS (evenly spread), then each sends its next message as soon as the previous answer arrives. Lag is measured with monitorEventLoopDelay (10 ms resolution) while the turns run.',
      'Per-turn CPU and round trips divide by all turns sent (failed ones included); turn latency percentiles are over answered turns.',
      ...(scaleOut.length === 0 ? [] : ['Scale-out: each process waits for the answers to the messages it sent. Another process may answer one: its sweeper takes a session over when a steer waited longer than a sweep interval while the sender was busy, as the service does under overload. That process then passes the answer to the sender (through the parent), and the turn counts as "answered by another process".']),
      'Memory per session: heap and RSS after a forced full GC with every runner still loaded (the registry keeps idle runners for 10 minutes), minus before the sessions started, divided by the runners loaded.',
      `The model runs in a child process (its CPU is not on this event loop). The service's sweeper runs (every 5 s). On 2 cores the three share the CPU: turns/s is bounded by agent + model process + Postgres CPU per turn (the last read from /proc for this database's backends; WAL writer and checkpointer not counted). ${largest ? `Largest run: ${count(largest.turns)} turns.` : ''}`,
      ...results.map((result) => `Statements per turn with ${count(result.sessions)} sessions: ${result.statementsPerTurn.map(([sql, times]) => `${sql} ${fixed(times, 2)}`).join('; ')}.`),
    ],
  };
}

export const b3: Benchmark = { id: 'b3', title: 'scale', run: runB3 };

if (isMain(import.meta.url)) await runAlone(b3);
