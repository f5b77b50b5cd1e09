// One worker process of B3's scale-out run (bench/b3-scale.ts, BENCH_B3_PROCESSES): the agent on
// the shared bench database, its share of the sessions, and its own CPU and round trips, reported
// to the parent. Several of these on one Postgres are replicas as the service runs them: each
// hears every wake-up (LISTEN/NOTIFY) and claims leases against the others.
import type { FakeModelServer } from '../../test/fakes/fake-model-server.js';
import { driveSessions } from './b3-drive.js';
import { openPostgresBenchDatabase } from './bench-database.js';
import { newThread, startChatAgent } from './chat-agent.js';
import type { ModelHost } from './model-host.js';

/** What the parent passes (argv[2], JSON). */
export interface ReplicaTask {
  url: string;
  modelUrl: string;
  sessions: number;
  turns: number;
  rampMs: number;
}

/** What a replica reports when its sessions are done. */
export interface ReplicaReport {
  turns: number;
  failedTurns: number;
  failures: Array<[string, number]>;
  /** Turns whose answer another process gave (after its sweeper took the session over). */
  answeredElsewhere: number;
  turnLatency: number[];
  wallMs: number;
  cpuMs: number;
  roundTrips: number;
  peakRssMb: number;
}

export type ReplicaMessage = { type: 'ready' } | { type: 'done'; report: ReplicaReport } | { type: 'answer'; threadKey: string };

const task = JSON.parse(process.argv[2] ?? '{}') as ReplicaTask;
const send = (message: ReplicaMessage) => process.send?.(message);
const database = await openPostgresBenchDatabase(task.url);
const model = { asHarnessModel: () => ({ url: task.modelUrl }) as unknown as FakeModelServer } as ModelHost;
const agent = await startChatAgent(database, model, { sweep: true });
for (let index = 0; index < 10; index += 1) await agent.turn(newThread(), 1, 1);
// Answers this process gives in another process's threads go to that process (see b3-scale.ts).
agent.harness.deps.events.subscribe((event) => {
  if (event.type === 'answer' && !event.session.threadKey.endsWith(`-p${process.pid}`)) send({ type: 'answer', threadKey: event.session.threadKey });
});
let answeredElsewhere = 0;
process.on('message', (message: ReplicaMessage | { type: 'go' | 'exit' }) => {
  if (message.type === 'answer' && agent.answered(message.threadKey)) answeredElsewhere += 1;
  if (message.type === 'go') void run();
  if (message.type === 'exit') void agent.close().then(() => database.drop()).finally(() => process.exit(0));
});
send({ type: 'ready' });

async function run(): Promise<void> {
  database.roundTrips.reset();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const cpu = process.cpuUsage();
  const result = await driveSessions(agent, task.sessions, task);
  const used = process.cpuUsage(cpu);
  clearInterval(sampler);
  send({
    type: 'done',
    report: {
      turns: task.sessions * task.turns,
      failedTurns: result.failedTurns,
      failures: [...result.failures],
      answeredElsewhere,
      turnLatency: result.turnLatency,
      wallMs: result.wallMs,
      cpuMs: (used.user + used.system) / 1000,
      roundTrips: database.roundTrips.total,
      peakRssMb: peakRss / 2 ** 20,
    },
  });
}
