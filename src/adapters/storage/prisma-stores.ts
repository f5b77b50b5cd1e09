// The storage ports of src/core/store.ts on Prisma (Postgres or PGlite). The larger stores live in
// their own files; the small ones (event log, memory runs, usage) are here.
import type pg from 'pg';
import type { AgentRole, ChatMessage } from '../../core/messages.js';
import { readContextHistory } from './context-history.js';
import type { EventLog, MemoryRunRecord, MemoryRunStore, Stores, UsageStore, UsageSummary } from '../../core/store.js';
import { storableJson, storableText } from '../../core/text-hygiene.js';
import { createApprovalStore } from './approval-store.js';
import { createContextStore } from './context-store.js';
import { createDeliveryStore } from './delivery-store.js';
import { createDocumentStore } from './document-store.js';
import { createReviewedWrite } from './reviewed-write.js';
import type { MemoryRun, Prisma, PrismaClient } from '../../../prisma/generated/client.js';
import { createMemorySpaceStore, createReviewStore, parseRequest } from './review-store.js';
import { createSessionStore } from './session-store.js';
import { createSteerStore } from './steer-store.js';
import { SearchGuard, defaultSearchBounds, type SearchBounds } from './search-guard.js';
import { guardStore } from './storage-errors.js';
import { insertModelCall } from './prisma-support.js';

const roles: readonly AgentRole[] = ['worker', 'summarizer', 'decider'];
const runRoles: ReadonlyArray<MemoryRunRecord['role']> = ['summarizer', 'decider'];
const runStatuses: ReadonlyArray<MemoryRunRecord['status']> = ['running', 'succeeded', 'failed', 'skipped'];

/** Every store core needs, on one Prisma client; failures reach core as StorageError. */
export function createPrismaStores(
  prisma: PrismaClient,
  options: {
    /** Postgres: the intake statement's own pool. */ ackPool?: pg.Pool | undefined;
    /** Postgres: the pool the hot statements of every step go to. */ pool?: pg.Pool | undefined;
    /** How searches are bounded (docs/security.md "Security and limits"); one allowance per searcher for both kinds. */ search?: SearchBounds | undefined;
  } = {},
): Stores {
  const search = new SearchGuard(options.search ?? defaultSearchBounds);
  return {
    sessions: guardStore(createSessionStore(prisma)),
    context: guardStore(createContextStore(prisma, options.pool, search)),
    steers: guardStore(createSteerStore(prisma, options.ackPool)),
    events: guardStore(createEventLog(prisma)),
    memoryRuns: guardStore(createMemoryRunStore(prisma)),
    usage: guardStore(createUsageStore(prisma)),
    documents: guardStore({ ...createDocumentStore(prisma, options.pool, search), ...createReviewedWrite(prisma, options.pool) }),
    deliveries: guardStore(createDeliveryStore(prisma, options.pool)),
    reviews: guardStore(createReviewStore(prisma)),
    spaces: guardStore(createMemorySpaceStore(prisma)),
    approvals: guardStore(createApprovalStore(prisma)),
  };
}

function createEventLog(prisma: PrismaClient): EventLog {
  return {
    async markProcessed(key) {
      // One statement, so two replicas receiving the same retry cannot both see "new".
      const inserted = await prisma.$executeRaw`INSERT INTO processed_events (key) VALUES (${key}) ON CONFLICT DO NOTHING`;
      return inserted > 0;
    },
    async wasProcessed(key) {
      const rows = await prisma.$queryRaw<unknown[]>`SELECT 1 FROM processed_events WHERE key = ${key}`;
      return rows.length > 0;
    },
  };
}

/** The error of a run failed because its process stopped or lost the session (failInterrupted). */
const interruptedError = 'interrupted: its process stopped or lost the session';

function createMemoryRunStore(prisma: PrismaClient): MemoryRunStore {
  return {
    async start(run) {
      const create = prisma.memoryRun.create({
        data: {
          ...(run.id ? { id: run.id } : {}), sessionId: run.sessionId, segmentId: run.segmentId, role: run.role, round: run.round, forkPoint: run.forkPoint,
          ...(run.request ? { request: { kind: run.request.kind, userId: run.request.userId, name: storableText(run.request.name), text: storableText(run.request.text), ...(run.request.eventId === undefined ? {} : { eventId: run.request.eventId }) } } : {}),
        },
      });
      const eventId = run.request?.eventId;
      if (eventId === undefined) return toMemoryRunRecord(await create);
      // The run takes the person's request in the same transaction: a crash leaves either both
      // (the run is interrupted later, and failInterrupted hands the request back) or neither.
      const [row] = await prisma.$transaction([create, prisma.memoryReviewEvent.updateMany({ where: { id: BigInt(eventId), requestPending: true }, data: { requestPending: false } })]);
      return toMemoryRunRecord(row);
    },

    async finish(runId, result) {
      // The summarizer's final line is the reason of each version it wrote (history, docs/product.md).
      if (result.note) {
        await prisma.memoryDocumentVersion.updateMany({
          where: { memoryRunId: runId, reason: '' },
          data: { reason: storableText(result.note.replace(/\s+/g, ' ').trim().slice(0, 300)) },
        });
      }
      // A run another replica marked failed as interrupted (it took this one for dead: a stalled
      // process whose lease ran out) may still succeed: that late success is recorded (R18).
      const interrupted = { status: 'failed', error: { startsWith: interruptedError } };
      await prisma.memoryRun.updateMany({
        where: { id: runId, OR: [{ status: 'running' }, ...(result.status === 'succeeded' ? [interrupted] : [])] },
        data: {
          status: result.status,
          decision: result.decision ?? null,
          error: result.error === undefined ? null : storableText(result.error),
          transcript: toJson(result.transcript),
          promptTokens: result.usage.promptTokens,
          cachedTokens: result.usage.cachedTokens,
          completionTokens: result.usage.completionTokens,
          finishedAt: new Date(),
          awaitingDelivery: result.awaitingDelivery ?? false,
        },
      });
    },

    async statuses(runIds) {
      const rows = await prisma.memoryRun.findMany({ where: { id: { in: runIds } }, select: { id: true, status: true } });
      return new Map(rows.map((row) => [row.id, parseRunStatus(row.id, row.status)]));
    },

    async failInterrupted(sessionId, exceptRunIds) {
      // One statement: a person's request an interrupted run had taken is pending again, so the
      // process that drives the session now carries it out (its note never came).
      const rows = await prisma.$queryRaw<Array<{ interrupted: bigint }>>`
        WITH interrupted AS (
          UPDATE memory_runs SET status = 'failed', error = ${interruptedError}, finished_at = now()
          WHERE session_id = ${sessionId} AND status = 'running' AND NOT (id = ANY(${[...exceptRunIds]}::text[]))
          RETURNING request),
        reopened AS (
          UPDATE memory_review_events SET request_pending = true
          WHERE session_id = ${sessionId} AND id IN (
            SELECT (request->>'eventId')::bigint FROM interrupted WHERE jsonb_typeof(request->'eventId') = 'number'))
        SELECT count(*) AS interrupted FROM interrupted`;
      return Number(rows[0]?.interrupted ?? 0n);
    },
  };
}

function createUsageStore(prisma: PrismaClient): UsageStore {
  return {
    async record(call) {
      // Raw: one row per model call of every role (the worker's answers carry theirs, append).
      await prisma.$executeRaw(insertModelCall(call));
    },

    async totals(scope) {
      const rows = 'sessionId' in scope
        ? await prisma.$queryRaw<TotalRow[]>`
            SELECT model, role, sum(prompt_tokens)::bigint AS prompt, sum(cached_tokens)::bigint AS cached, sum(completion_tokens)::bigint AS completion,
              sum(cache_write_tokens)::bigint AS written
            FROM model_calls WHERE session_id = ${scope.sessionId} AND (${scope.segmentId ?? null}::text IS NULL OR segment_id = ${scope.segmentId ?? null})
            GROUP BY model, role`
        : await prisma.$queryRaw<TotalRow[]>`
            SELECT c.model, c.role, sum(c.prompt_tokens)::bigint AS prompt, sum(c.cached_tokens)::bigint AS cached, sum(c.completion_tokens)::bigint AS completion,
              sum(c.cache_write_tokens)::bigint AS written
            FROM model_calls c JOIN sessions s ON s.id = c.session_id
            WHERE s.platform = ${scope.channel.platform} AND s.workspace_id = ${scope.channel.workspaceId} AND s.channel_id = ${scope.channel.channelId}
              AND c.created_at >= ${scope.since}
            GROUP BY c.model, c.role`;
      return rows.flatMap((row) => {
        const role = roles.find((candidate) => candidate === row.role);
        return role ? [{ model: row.model, role, promptTokens: Number(row.prompt), cachedTokens: Number(row.cached), completionTokens: Number(row.completion), ...(row.written === null ? {} : { cacheWriteTokens: Number(row.written) }) }] : [];
      });
    },

    contextHistory: (sessionId, limit) => readContextHistory(prisma, sessionId, limit),

    async summary(sessionId) {
      const groups = await prisma.modelCall.groupBy({
        by: ['role'],
        where: { sessionId },
        _count: { _all: true },
        _sum: { promptTokens: true, cachedTokens: true, completionTokens: true },
      });
      const zero = { calls: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0 };
      const summary: UsageSummary = { worker: { ...zero }, summarizer: { ...zero }, decider: { ...zero } };
      for (const group of groups) {
        const role = roles.find((candidate) => candidate === group.role);
        if (!role) continue; // a role core no longer knows is not part of its summary
        summary[role] = {
          calls: group._count._all,
          promptTokens: group._sum.promptTokens ?? 0,
          cachedTokens: group._sum.cachedTokens ?? 0,
          completionTokens: group._sum.completionTokens ?? 0,
        };
      }
      return summary;
    },
  };
}

interface TotalRow {
  model: string;
  role: string;
  prompt: bigint;
  cached: bigint;
  completion: bigint;
  /** Null when no call of the group reported cache writes. */
  written: bigint | null;
}

/**
 * The transcript as a JSON column value. jsonb rejects the NUL character (\u0000) that a model may
 * emit, and a run's result must not be lost over it, so NUL becomes U+FFFD here.
 */
function toJson(transcript: ChatMessage[]): Prisma.InputJsonValue {
  return storableJson(transcript) as unknown as Prisma.InputJsonValue;
}

function toMemoryRunRecord(row: MemoryRun): MemoryRunRecord {
  const role = runRoles.find((candidate) => candidate === row.role);
  if (!role) throw new Error(`memory run ${row.id} has an unknown role "${row.role}"`);
  return {
    id: row.id,
    sessionId: row.sessionId,
    segmentId: row.segmentId,
    role,
    round: row.round,
    status: parseRunStatus(row.id, row.status),
    forkPoint: row.forkPoint,
    request: parseRequest(row.request),
  };
}

function parseRunStatus(runId: string, status: string): MemoryRunRecord['status'] {
  const parsed = runStatuses.find((candidate) => candidate === status);
  if (!parsed) throw new Error(`memory run ${runId} has an unknown status "${status}"`);
  return parsed;
}
