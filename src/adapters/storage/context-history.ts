// The context's size over a session's life (`status` draws it): the prompt tokens of each worker
// model call, the summarizer forks between them (memory checkpoints) and why each reset happened.
// Read from what is stored anyway (model_calls, memory_runs, segments); bounded to the newest steps.
import type { PrismaClient } from '../../../prisma/generated/client.js';
import type { ContextHistory, ContextStep } from '../../core/store.js';

interface StepRow {
  tokens: number;
  at: Date;
  segment: number;
}

interface ForkRow {
  at: Date;
  segment: number;
}

/** The newest `limit` worker steps of a session with their checkpoints, and its resets. */
export async function readContextHistory(prisma: PrismaClient, sessionId: string, limit: number): Promise<ContextHistory> {
  const newest = await prisma.$queryRaw<StepRow[]>`
    SELECT c.prompt_tokens AS tokens, c.created_at AS at, s.ordinal AS segment
    FROM model_calls c JOIN segments s ON s.id = c.segment_id
    WHERE c.session_id = ${sessionId} AND c.role = 'worker' AND c.error IS NULL
    ORDER BY c.id DESC LIMIT ${limit + 1}`;
  const omitted = newest.length > limit ? await countSteps(prisma, sessionId) - limit : 0;
  const rows = newest.slice(0, limit).reverse();
  const since = rows[0]?.at ?? new Date(0);
  const [forks, resets] = await Promise.all([
    prisma.$queryRaw<ForkRow[]>`
      SELECT m.started_at AS at, s.ordinal AS segment
      FROM memory_runs m JOIN segments s ON s.id = m.segment_id
      WHERE m.session_id = ${sessionId} AND m.role = 'summarizer' AND m.started_at >= ${since}
      ORDER BY m.started_at LIMIT ${limit}`,
    prisma.segment.findMany({ where: { sessionId, ordinal: { gt: 1 } }, select: { ordinal: true, resetReason: true }, orderBy: { ordinal: 'asc' }, take: limit }),
  ]);
  const steps: ContextStep[] = rows.map((row) => ({ segment: Number(row.segment), tokens: Number(row.tokens), memory: false }));
  // Each fork marks the last step of its segment before it (steps and forks are both in time order).
  let step = 0;
  for (const fork of forks) {
    while (step + 1 < rows.length && rows[step + 1]!.at <= fork.at) step += 1;
    const row = rows[step];
    if (row && row.at <= fork.at && Number(row.segment) === Number(fork.segment)) steps[step]!.memory = true;
  }
  return {
    steps,
    resets: resets.map((segment) => ({ segment: segment.ordinal, reason: segment.resetReason === 'context-full' ? 'context-full' : null })),
    omitted,
  };
}

async function countSteps(prisma: PrismaClient, sessionId: string): Promise<number> {
  return prisma.modelCall.count({ where: { sessionId, role: 'worker', error: null } });
}
