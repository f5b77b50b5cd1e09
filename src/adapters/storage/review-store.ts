// Review events of memory spaces (reverts, edits, 👍, pins, remember/forget) and the spaces
// themselves with the conversation that owns each (docs/product.md "Review memory", "Memory spaces").
import { z } from 'zod';
import type { MemoryScope, MemorySpaceRecord, MemorySpaceStore, PersonRequest, Platform, ReviewedChange, ReviewEventKind, ReviewEventRecord, ReviewStore } from '../../core/store.js';
import { storableText } from '../../core/text-hygiene.js';
import type { MemoryReviewEvent, MemorySpace, PrismaClient } from '../../../prisma/generated/client.js';
import { spaceChannel } from './session-store.js';

const kinds: readonly ReviewEventKind[] = ['revert', 'edit', 'ack', 'pin', 'unpin', 'remember', 'forget'];
const platforms: readonly Platform[] = ['slack', 'discord', 'console'];
const scopes: readonly MemoryScope[] = ['channel', 'thread', 'workspace'];

/** An event's text is a short quote: longer text is cut with a visible mark. */
const maxEventText = 1_000;
/** A person's remember / forget is kept whole for the run that carries it out (Agent caps it). */
const maxRequestText = 4_000;

/** An event's columns as stored: the text a short quote, names cut, what Postgres cannot hold mapped. */
export function storedEvent(event: ReviewedChange): ReviewedChange {
  const text = event.text.length > maxEventText ? `${event.text.slice(0, maxEventText)} […]` : event.text;
  return { kind: event.kind, authorId: event.authorId, authorName: storableText(event.authorName.slice(0, 200)), text: storableText(text), sessionId: event.sessionId };
}

/** Creates the Prisma-backed ReviewStore. */
export function createReviewStore(prisma: PrismaClient): ReviewStore {
  return {
    async record(event) {
      const row = await prisma.memoryReviewEvent.create({ data: { ...storedEvent(event), spaceId: event.spaceId, documentPath: event.documentPath } });
      return toEventRecord(row);
    },

    async unseen(spaceId, limit) {
      // After the newest event a SUCCEEDED summarizer run of the space was given: a failed run's
      // events reach the next run, like its part of the context does (R4).
      const rows = await prisma.$queryRaw<Array<{ through: bigint | null }>>`
        SELECT max(r.review_events_through) AS through
        FROM memory_runs r JOIN sessions s ON s.id = r.session_id
        WHERE s.memory_space_id = ${spaceId} AND r.role = 'summarizer' AND r.status = 'succeeded'`;
      const through = rows[0]?.through ?? 0n;
      const where = { spaceId, id: { gt: through } };
      const [newest, total] = await Promise.all([
        prisma.memoryReviewEvent.findMany({ where, orderBy: { id: 'desc' }, take: limit }),
        prisma.memoryReviewEvent.count({ where }),
      ]);
      return { events: newest.reverse().map(toEventRecord), omitted: Math.max(0, total - newest.length) };
    },

    async markGiven(memoryRunId, throughEventId) {
      await prisma.memoryRun.update({ where: { id: memoryRunId }, data: { reviewEventsThrough: BigInt(throughEventId) } });
    },

    async wasGiven(spaceId, eventId) {
      const rows = await prisma.$queryRaw<Array<{ given: boolean }>>`
        SELECT EXISTS (
          SELECT 1 FROM memory_runs r JOIN sessions s ON s.id = r.session_id
          WHERE s.memory_space_id = ${spaceId} AND r.role = 'summarizer' AND r.status IN ('running', 'succeeded')
            AND r.review_events_through >= ${eventId}) AS given`;
      return rows[0]?.given ?? false;
    },

    async request(spaceId, sessionId, request) {
      const text = request.text.length > maxRequestText ? `${request.text.slice(0, maxRequestText)} […]` : request.text;
      const row = await prisma.memoryReviewEvent.create({
        data: {
          spaceId, kind: request.kind, documentPath: null, authorId: request.userId, authorName: storableText(request.name.slice(0, 200)),
          text: storableText(text), sessionId, requestPending: true,
        },
      });
      return toEventRecord(row);
    },

    async pendingRequests(sessionId) {
      const rows = await prisma.memoryReviewEvent.findMany({ where: { requestPending: true, sessionId }, orderBy: { id: 'asc' } });
      return rows.flatMap((row) => (row.kind === 'remember' || row.kind === 'forget'
        ? [{ kind: row.kind, userId: row.authorId, name: row.authorName, text: row.text, eventId: Number(row.id) }]
        : []));
    },

    async handBack(eventId, memoryRunId) {
      // One statement, so a late hand-back (its process stopping slowly, after the lease was
      // given up) cannot reopen a request the next driver already carried out.
      await prisma.$executeRaw`
        UPDATE memory_review_events SET request_pending = true
        WHERE id = ${BigInt(eventId)} AND kind IN ('remember', 'forget')
          AND EXISTS (SELECT 1 FROM memory_runs r WHERE r.id = ${memoryRunId} AND r.status = 'running')`;
    },

    async recent(spaceId, limit) {
      const rows = await prisma.memoryReviewEvent.findMany({ where: { spaceId }, orderBy: { id: 'desc' }, take: limit });
      return rows.map(toEventRecord);
    },
  };
}

/** Creates the Prisma-backed MemorySpaceStore. */
export function createMemorySpaceStore(prisma: PrismaClient): MemorySpaceStore {
  return {
    async get(spaceId) {
      const row = await prisma.memorySpace.findUnique({ where: { id: spaceId } });
      return row ? toSpaceRecord(row) : null;
    },

    async list(platform, workspaceId) {
      const rows = await prisma.memorySpace.findMany({
        where: { platform, workspaceId, documents: { some: { sessionKey: '', deleted: false } } },
        orderBy: { createdAt: 'desc' },
      });
      return rows.map(toSpaceRecord);
    },
  };
}

const personRequest = z.object({ kind: z.enum(['remember', 'forget']), userId: z.string(), name: z.string(), text: z.string(), eventId: z.number().int().optional() });

/** A run's stored person request, or null (none, or not one this version understands). */
export function parseRequest(value: unknown): PersonRequest | null {
  const parsed = personRequest.safeParse(value);
  if (!parsed.success) return null;
  const { eventId, ...request } = parsed.data;
  return eventId === undefined ? request : { ...request, eventId };
}

function toEventRecord(row: MemoryReviewEvent): ReviewEventRecord {
  const kind = kinds.find((candidate) => candidate === row.kind);
  if (!kind) throw new Error(`review event ${String(row.id)} has an unknown kind "${row.kind}"`);
  return {
    id: Number(row.id), spaceId: row.spaceId, kind, documentPath: row.documentPath, authorId: row.authorId,
    authorName: row.authorName, text: row.text, sessionId: row.sessionId, createdAt: row.createdAt,
  };
}

function toSpaceRecord(row: MemorySpace): MemorySpaceRecord {
  const platform = platforms.find((candidate) => candidate === row.platform);
  const scope = scopes.find((candidate) => candidate === row.scope);
  if (!platform || !scope) throw new Error(`memory space ${row.id} has an unknown platform or scope`);
  return { id: row.id, platform, workspaceId: row.workspaceId, scope, channelId: spaceChannel(row.scope, row.scopeKey) };
}
