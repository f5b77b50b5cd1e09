// The agent as B2 and B3 drive it: the real Agent (test/support/agent-harness.ts) on a bench
// database, the model process running the chat scenario, a no-op tool, a recording model client,
// and a way to await the answer to a message in a given thread.
import { z } from 'zod';
import { PostgresWakeups } from '../../src/adapters/storage/wakeups.js';
import { createLogger } from '../../src/log.js';
import { createAgentHarness, newThread as harnessThread, personMessage, type AgentHarness } from '../../test/support/agent-harness.js';
import type { SessionRecord, ThreadAddress } from '../../src/core/store.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import type { BenchDatabase } from './bench-database.js';
import type { ModelHost } from './model-host.js';
import { labelStoreCalls } from './bench-database.js';
import { CallRecorder } from './probes.js';
import { chatMessage } from './workload.js';

export interface ChatAgent {
  harness: AgentHarness;
  recorder: CallRecorder;
  /**
   * Sends the person's message for `turn` (asking for `steps` tool steps) in `thread` and resolves
   * when its answer is emitted, with the session and the performance.now() times.
   */
  turn(thread: ThreadAddress, turn: number, steps: number): Promise<{ session: SessionRecord; sentAt: number; answeredAt: number }>;
  /** An answer given in `threadKey` by another process: resolves the turn waiting for it (false: none waits). */
  answered(threadKey: string): boolean;
  close(): Promise<void>;
}

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing; returns "ok" (benchmark tool).',
  input: z.object({ n: z.number().int() }),
  execute: async () => 'ok',
}) as AnyTool;

/** Replica timings as the service uses them (src/build-agent.ts), not the test harness's. */
const productionReplica = { leaseTtlMs: 15_000, sweepIntervalMs: 5_000, leaseIdleGraceMs: 5_000 };

/** A turn without an answer after this long fails (a stuck run must not hang the benchmark). */
const turnTimeoutMs = 180_000;

export async function startChatAgent(database: BenchDatabase, model: ModelHost, options: { sweep?: boolean } = {}): Promise<ChatAgent> {
  const recorder = new CallRecorder();
  // On Postgres the drivers listen for wake-ups there, as in the service, so the message's one
  // intake statement (the ack pool's) also notifies them.
  const pool = database.database.pool;
  const wakeups = pool && database.url ? await PostgresWakeups.start(pool, database.url, createLogger('silent')) : undefined;
  const harness = await createAgentHarness({
    database: database.database,
    model: model.asHarnessModel(),
    tools: [noop],
    settings: { contextWindow: 128_000 },
    replica: { ...productionReplica, ...(wakeups ? { wakeups } : {}) },
  });
  harness.deps.model = recorder.wrap(harness.deps.model);
  if (process.env['BENCH_STATEMENT_SOURCES'] === '1') labelStoreCalls(harness.deps.stores as unknown as Record<string, Record<string, unknown>>);
  if (options.sweep) harness.agent.runners.startSweeping();
  // Answers by thread key; a failed drive fails the waiting turn instead of leaving it hanging.
  // The harness's own event list is emptied so it does not grow.
  const waiting = new Map<string, Array<{ resolve: (at: number) => void; reject: (error: Error) => void }>>();
  const next = (threadKey: string) => {
    const waiters = waiting.get(threadKey);
    const waiter = waiters?.shift();
    if (waiters?.length === 0) waiting.delete(threadKey);
    return waiter;
  };
  harness.deps.events.subscribe((event) => {
    harness.events.length = 0;
    if (event.type !== 'answer' && event.type !== 'error') return;
    const waiter = next(event.session.threadKey);
    if (event.type === 'answer') waiter?.resolve(performance.now());
    else waiter?.reject(new Error(`run failed: ${event.error.code}: ${event.error.message}`));
  });
  /** Where a session's run stands, from the database (for a turn that got no answer here). */
  const whereIs = async (session: SessionRecord): Promise<string> => {
    const rows = await database.database.prisma.$queryRaw<Array<{ last: string | null; queued: bigint; owner: string | null }>>`
      SELECT (SELECT m.role FROM context_messages m JOIN segments g ON g.id = m.segment_id WHERE g.session_id = ${session.id} ORDER BY g.ordinal DESC, m.seq DESC LIMIT 1) AS last,
             (SELECT count(*) FROM steer_messages WHERE session_id = ${session.id} AND status = 'queued') AS queued,
             (SELECT owner FROM session_leases WHERE session_id = ${session.id}) AS owner`;
    const row = rows[0];
    return `last message: ${row?.last ?? 'none'}, queued steers: ${String(row?.queued ?? '?')}, lease: ${row?.owner === harness.deps.replica.owner ? 'this process' : (row?.owner ?? 'none')}`;
  };
  return {
    harness,
    recorder,
    async turn(thread, turn, steps) {
      const answered = new Promise<number>((resolve, reject) => {
        const waiters = waiting.get(thread.threadKey) ?? [];
        waiters.push({ resolve, reject });
        waiting.set(thread.threadKey, waiters);
      });
      answered.catch(() => undefined); // rejected before it is awaited when submit itself fails
      const sentAt = performance.now();
      const withdraw = () => {
        const waiters = waiting.get(thread.threadKey);
        waiters?.pop();
        if (waiters?.length === 0) waiting.delete(thread.threadKey);
      };
      // startSession on every turn: a first turn that failed to create the session (B3's burst)
      // does not make the later ones fail too. open() finds an existing session with one query.
      let session: SessionRecord | null;
      try {
        ({ session } = await harness.agent.submit(personMessage(thread, chatMessage(turn, steps)), { startSession: true }));
      } catch (error) {
        withdraw();
        throw error;
      }
      if (!session) {
        withdraw();
        throw new Error(`no session for thread ${thread.threadKey}`);
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          withdraw();
          void whereIs(session).catch(() => 'the database could not be read').then((where) => reject(new Error(`no answer within ${turnTimeoutMs} ms in thread ${thread.threadKey} (${where})`)));
        }, turnTimeoutMs);
      });
      try {
        return { session, sentAt, answeredAt: await Promise.race([answered, timeout]) };
      } finally {
        clearTimeout(timer);
      }
    },
    answered(threadKey) {
      const waiter = next(threadKey);
      waiter?.resolve(performance.now());
      return waiter !== undefined;
    },
    close: async () => {
      await harness.close();
      await wakeups?.close();
    },
  };
}

/** A new thread, unique across the processes of a scale-out run too (its messages' keys derive from it). */
export function newThread(): ThreadAddress {
  const thread = harnessThread();
  return { ...thread, channelId: `${thread.channelId}-p${process.pid}`, threadKey: `${thread.threadKey}-p${process.pid}` };
}
