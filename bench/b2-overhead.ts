// B2 overhead: what the agent itself costs per turn when the model answers at once. Orchestration
// = time of a worker turn minus the model call's time (the call is timed at the ModelClient, so
// HTTP and JSON of the call count as model time). Run on Postgres (durable commits, and with
// synchronous_commit off to separate the disk's fsync from the agent's work) and on PGlite.
// Run alone: npx tsx bench/b2-overhead.ts
import { createPgliteBenchDatabase, createPostgresBenchDatabase, type BenchDatabase } from './support/bench-database.js';
import { newThread, startChatAgent, type ChatAgent } from './support/chat-agent.js';
import { startModelHost, type ModelHost } from './support/model-host.js';
import type { CallRecord } from './support/probes.js';
import { isMain, runAlone, type BenchReport, type Benchmark, type Table, type TargetCheck } from './support/report.js';
import { envNumber, fixed, percentile, sleep, sum } from './support/stats.js';

type Config = 'postgres' | 'postgres-async-commit' | 'pglite';

const configLabels: Record<Config, string> = {
  postgres: 'Postgres',
  'postgres-async-commit': 'Postgres, synchronous_commit off',
  pglite: 'PGlite',
};

interface B2Settings {
  /** BENCH_B2_SESSIONS × BENCH_B2_MESSAGES sequential message turns (answered without tools). */
  sessions: number;
  messages: number;
  /** BENCH_B2_STEPS: tool steps of the one message of each step session. */
  steps: number;
  /** BENCH_B2_CONCURRENCY sessions at once, each BENCH_B2_CONCURRENT_MESSAGES turns of one tool step. */
  concurrency: number;
  concurrentMessages: number;
  /** BENCH_B2_CONFIGS: comma-separated subset of postgres, postgres-async-commit, pglite. */
  configs: Config[];
}

const allConfigs: Config[] = ['postgres', 'postgres-async-commit', 'pglite'];

function configsFromEnvironment(): Config[] {
  const raw = process.env['BENCH_B2_CONFIGS'];
  if (!raw) return allConfigs;
  const wanted = raw.split(',').map((part) => part.trim());
  const unknown = wanted.filter((name) => !allConfigs.some((config) => config === name));
  if (unknown.length) throw new Error(`BENCH_B2_CONFIGS: unknown ${unknown.join(', ')}; use ${allConfigs.join(', ')}`);
  return allConfigs.filter((config) => wanted.includes(config));
}

function settingsFromEnvironment(): B2Settings {
  return {
    configs: configsFromEnvironment(),
    sessions: envNumber('BENCH_B2_SESSIONS', 5),
    messages: envNumber('BENCH_B2_MESSAGES', 20),
    steps: envNumber('BENCH_B2_STEPS', 20),
    concurrency: envNumber('BENCH_B2_CONCURRENCY', 16),
    concurrentMessages: envNumber('BENCH_B2_CONCURRENT_MESSAGES', 5),
  };
}

interface ConfigResult {
  config: Config;
  /** Message turns: user-visible latency minus model time, and until the runner is idle. */
  turnToAnswer: number[];
  turnToIdle: number[];
  turnModel: number[];
  turnRoundTrips: number;
  turnDbMs: number;
  turnCount: number;
  turnWallMs: number;
  /** CPU time of this process (all its threads) per turn / per model call, ms. */
  turnCpuMs: number;
  stepCpuMs: number;
  topStatements: Array<[string, number]>;
  /** Tool steps: from one worker call's start to the next, minus the first call's time. */
  stepOrchestration: number[];
  stepRoundTrips: number;
  stepCalls: number;
  /** Concurrent phase. */
  concurrentTurns: number;
  concurrentWallMs: number;
  concurrentOrchestration: number[];
  concurrentRoundTrips: number;
  /** Cost of single statements outside the agent, for decomposing the turn. */
  calibration: Calibration[];
}

interface Calibration {
  statement: string;
  wallMs: number;
  cpuMs: number;
}

/** Wall and CPU time per call of `statement`, run `times` times in sequence. */
async function calibrate(statement: string, times: number, call: () => Promise<unknown>): Promise<Calibration> {
  for (let index = 0; index < 20; index += 1) await call();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let index = 0; index < times; index += 1) await call();
  return { statement, wallMs: (performance.now() - started) / times, cpuMs: cpuMsSince(cpu) / times };
}

/** CPU milliseconds (user + system, all threads of this process) since `start`. */
function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const modelTime = (calls: CallRecord[], from: number, to: number, sessionId: string) =>
  sum(calls.filter((call) => call.cacheKey === sessionId && call.startedAt >= from && call.endedAt <= to).map((call) => call.endedAt - call.startedAt));

async function runConfig(config: Config, settings: B2Settings, model: ModelHost): Promise<ConfigResult> {
  const database: BenchDatabase = config === 'pglite' ? await createPgliteBenchDatabase() : await createPostgresBenchDatabase({ durable: config === 'postgres' });
  let agent: ChatAgent | undefined;
  try {
    agent = await startChatAgent(database, model);
    const calls = agent.recorder.calls;
    const idle = async (sessionId: string) => {
      await (await agent!.harness.agent.runner(sessionId)).whenIdle();
      return performance.now();
    };
    // Warm-up: JIT, Prisma's query plans, pool connections.
    const warm = newThread();
    for (let turn = 1; turn <= 5; turn += 1) await idle((await agent.turn(warm, turn, 1)).session.id);
    await sleep(50);

    // Phase 1: sequential message turns, each answered without tools (one model call).
    database.roundTrips.reset();
    let cpu = process.cpuUsage();
    const turnToAnswer: number[] = [];
    const turnToIdle: number[] = [];
    const turnModel: number[] = [];
    let turnWallMs = 0;
    for (let session = 0; session < settings.sessions; session += 1) {
      const thread = newThread();
      for (let turn = 1; turn <= settings.messages; turn += 1) {
        const result = await agent.turn(thread, turn, 0);
        const idleAt = await idle(result.session.id);
        const model = modelTime(calls, result.sentAt, idleAt, result.session.id);
        turnModel.push(model);
        turnToAnswer.push(result.answeredAt - result.sentAt - model);
        turnToIdle.push(idleAt - result.sentAt - model);
        turnWallMs += idleAt - result.sentAt;
        // A person writes again much later: let the lease release after the turn finish first.
        await sleep(5);
      }
    }
    const turnCount = turnToAnswer.length;
    const turnCpuMs = cpuMsSince(cpu) / turnCount;
    const turnRoundTrips = database.roundTrips.total / turnCount;
    const turnDbMs = database.roundTrips.totalMs / turnCount;
    const topStatements = database.roundTrips.top(30).map(([sql, times]): [string, number] => [sql, times / turnCount]);

    // Phase 2: tool steps within one run.
    database.roundTrips.reset();
    cpu = process.cpuUsage();
    const stepOrchestration: number[] = [];
    let stepCalls = 0;
    for (let session = 0; session < settings.sessions; session += 1) {
      const result = await agent.turn(newThread(), 1, settings.steps);
      await idle(result.session.id);
      const worker = calls.filter((call) => call.cacheKey === result.session.id && call.role === 'worker').sort((left, right) => left.startedAt - right.startedAt);
      stepCalls += worker.length;
      for (let index = 0; index + 1 < worker.length; index += 1) {
        const current = worker[index];
        const next = worker[index + 1];
        if (current && next) stepOrchestration.push(next.startedAt - current.startedAt - (current.endedAt - current.startedAt));
      }
      await sleep(5);
    }
    const stepRoundTrips = database.roundTrips.total / Math.max(1, stepCalls);
    const stepCpuMs = cpuMsSince(cpu) / Math.max(1, stepCalls);

    // Phase 3: many sessions at once, each a few turns of one tool step.
    database.roundTrips.reset();
    const concurrentOrchestration: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: settings.concurrency }, async () => {
        const thread = newThread();
        for (let turn = 1; turn <= settings.concurrentMessages; turn += 1) {
          const result = await agent!.turn(thread, turn, 1);
          concurrentOrchestration.push(result.answeredAt - result.sentAt - modelTime(calls, result.sentAt, result.answeredAt, result.session.id));
        }
      }),
    );
    const concurrentWallMs = performance.now() - started;
    const concurrentTurns = settings.concurrency * settings.concurrentMessages;
    const concurrentRoundTrips = database.roundTrips.total / concurrentTurns;

    // Calibration: one statement at a time, through the driver and through Prisma.
    const prisma = database.database.prisma;
    const pool = database.database.pool;
    const sessionId = (await agent.harness.agent.findSession(warm))?.id ?? '';
    const calibration: Calibration[] = [];
    if (pool) calibration.push(await calibrate('pg pool.query SELECT 1', 300, () => pool.query('SELECT 1')));
    calibration.push(await calibrate('Prisma $queryRaw SELECT 1', 300, () => prisma.$queryRaw`SELECT 1`));
    calibration.push(await calibrate('Prisma session.findUnique', 300, () => prisma.session.findUnique({ where: { id: sessionId } })));
    calibration.push(await calibrate('Prisma modelCall.create (a commit)', 200, () =>
      prisma.modelCall.create({ data: { sessionId, role: 'worker', model: 'calibration', promptTokens: 1, cachedTokens: 0, completionTokens: 1, latencyMs: 1 } })));
    calibration.push(await calibrate('Prisma $transaction with one SELECT … FOR UPDATE', 200, () =>
      prisma.$transaction((tx) => tx.$queryRaw`SELECT id FROM sessions WHERE id = ${sessionId} FOR UPDATE`)));
    const deps = agent.harness.deps;
    const request = { model: deps.settings.model, messages: [{ role: 'user' as const, content: 'Ada wrote:\n> hi (steps=0)' }], tools: deps.tools.definitions, cacheKey: 'calibration' };
    calibration.push(await calibrate('model call, instant answer (OpenAI client, HTTP, SSE)', 200, () => deps.model.complete(request, { role: 'worker' })));
    return {
      config, turnToAnswer, turnToIdle, turnModel, turnRoundTrips, turnDbMs, turnCount, turnWallMs, turnCpuMs, stepCpuMs, topStatements,
      stepOrchestration, stepRoundTrips, stepCalls, concurrentTurns, concurrentWallMs, concurrentOrchestration, concurrentRoundTrips, calibration,
    };
  } finally {
    await agent?.close();
    await database.drop();
  }
}

async function runB2(): Promise<BenchReport> {
  const settings = settingsFromEnvironment();
  const model = await startModelHost({ kind: 'chat', delayMs: 0 }, { simulateCache: false });
  const results: ConfigResult[] = [];
  try {
    for (const config of settings.configs) {
      console.error(`b2: ${configLabels[config]}…`);
      await model.configure({ kind: 'chat', delayMs: 0 });
      results.push(await runConfig(config, settings, model));
    }
  } finally {
    await model.close();
  }
  return buildReport(settings, results);
}

const ms = (values: number[], p: number) => fixed(percentile(values, p), 2);

function buildReport(settings: B2Settings, results: ConfigResult[]): BenchReport {
  const turns: Table = {
    title: 'Message turns, one at a time (a person\'s message → answer, one model call); orchestration = turn time − model call time, ms',
    columns: ['database', 'turns', 'turns/s', 'to answer p50', 'to answer p99', 'until idle p50', 'until idle p99', 'model call p50', 'agent CPU ms / turn', 'DB round trips / turn', 'DB ms / turn'],
    rows: results.map((result) => [
      configLabels[result.config],
      result.turnCount,
      fixed((result.turnCount * 1000) / result.turnWallMs, 1),
      ms(result.turnToAnswer, 50),
      ms(result.turnToAnswer, 99),
      ms(result.turnToIdle, 50),
      ms(result.turnToIdle, 99),
      ms(result.turnModel, 50),
      fixed(result.turnCpuMs, 2),
      fixed(result.turnRoundTrips, 1),
      fixed(result.turnDbMs, 1),
    ]),
  };
  const steps: Table = {
    title: `Tool steps inside one run (model call → tool → checkpoint → next model call), ${settings.steps} per run; orchestration ms`,
    columns: ['database', 'steps', 'p50', 'p99', 'agent CPU ms / model call', 'DB round trips / model call'],
    rows: results.map((result) => [configLabels[result.config], result.stepOrchestration.length, ms(result.stepOrchestration, 50), ms(result.stepOrchestration, 99), fixed(result.stepCpuMs, 2), fixed(result.stepRoundTrips, 1)]),
  };
  const concurrent: Table = {
    title: `${settings.concurrency} sessions at once, ${settings.concurrentMessages} turns each (one tool step per turn); orchestration to answer, ms`,
    columns: ['database', 'turns', 'turns/s', 'p50', 'p99', 'DB round trips / turn'],
    rows: results.map((result) => [
      configLabels[result.config],
      result.concurrentTurns,
      fixed((result.concurrentTurns * 1000) / result.concurrentWallMs, 1),
      ms(result.concurrentOrchestration, 50),
      ms(result.concurrentOrchestration, 99),
      fixed(result.concurrentRoundTrips, 1),
    ]),
  };
  const durable = results.find((result) => result.config === 'postgres');
  const tables = [turns, steps, concurrent];
  tables.push({
    title: 'Calibration: one statement at a time outside the agent, ms per call',
    columns: ['database · statement', 'wall', 'CPU of this process'],
    rows: results.flatMap((result) => result.calibration.map((item) => [`${configLabels[result.config]} · ${item.statement}`, fixed(item.wallMs, 3), fixed(item.cpuMs, 3)])),
  });
  if (durable) {
    tables.push({
      title: 'Statements per message turn on Postgres (from the round-trip counter)',
      columns: ['statement', 'per turn'],
      rows: durable.topStatements.map(([sql, perTurn]) => [sql, fixed(perTurn, 2)]),
    });
  }
  const targets: TargetCheck[] = durable
    ? [
        {
          target: 'orchestration p50 ≤ 5 ms per turn on Postgres',
          measured: `message turn ${ms(durable.turnToAnswer, 50)} ms to the answer (${ms(durable.turnToIdle, 50)} ms until idle), tool step ${ms(durable.stepOrchestration, 50)} ms`,
          met: percentile(durable.turnToAnswer, 50) <= 5 && percentile(durable.stepOrchestration, 50) <= 5,
        },
      ]
    : [];
  return {
    id: 'b2',
    title: 'overhead per turn (instant model)',
    settings: {
      'sequential turns': `${settings.sessions}×${settings.messages}`,
      'step runs': `${settings.sessions}×${settings.steps} steps`,
      concurrent: `${settings.concurrency}×${settings.concurrentMessages}`,
    },
    tables,
    targets,
    ...(durable
      ? {
          summaryLines: [
            `B2 summary: message_turn_p50_ms=${ms(durable.turnToAnswer, 50)} tool_step_p50_ms=${ms(durable.stepOrchestration, 50)} `
            + `statements_per_turn=${fixed(durable.turnRoundTrips, 1)}`,
          ],
        }
      : {}),
    notes: [
      'Round trips are counted at the driver: every pg client the pool hands out has its query() wrapped (pool "acquire" event), so BEGIN/COMMIT count; on PGlite query() and transaction() (BEGIN + statements + COMMIT) are wrapped. Prisma\'s $on("query") is not available with driver adapters.',
      '"DB ms / turn" sums the time from sending each statement to its result. The model runs in a child process and answers at once; its HTTP and JSON time counts as model time. "agent CPU ms" is this process\'s CPU time (user + system, all threads: JS, Prisma\'s query compiler, pg, the OpenAI client, PGlite\'s engine when used) per turn: unlike wall time it does not grow when other processes compete for the CPU.',
      'Replica settings as in production (lease TTL 15 s, idle grace 5 s): back-to-back turns keep the session lease instead of claiming it again.',
    ],
  };
}

export const b2: Benchmark = { id: 'b2', title: 'overhead', run: runB2 };

if (isMain(import.meta.url)) await runAlone(b2);
