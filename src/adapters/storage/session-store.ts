// Sessions: one per platform thread, created with its memory space and first segment, plus the
// backlog query the service runs at start-up to drive sessions that were cut off (R7, R12).
import { randomUUID } from 'node:crypto';
import type { MemoryScope, Platform, SessionRecord, SessionStore, ThreadAddress } from '../../core/store.js';
import type { PrismaClient, Session } from '../../../prisma/generated/client.js';
import { storableText } from '../../core/text-hygiene.js';
import { isUniqueViolation, pickDefined, type TransactionClient } from './prisma-support.js';

const platforms: readonly Platform[] = ['slack', 'discord', 'console'];

// A lost creation race is followed by a re-read; the winner has committed by then, so one more
// attempt normally suffices. The bound only stops a pathological loop.
const maxOpenAttempts = 5;

/** Creates the Prisma-backed SessionStore. */
export function createSessionStore(prisma: PrismaClient): SessionStore {
  const find = async (address: ThreadAddress): Promise<SessionRecord | null> => {
    const row = await prisma.session.findUnique({ where: { platform_workspaceId_channelId_threadKey: threadKey(address) } });
    return row ? toSessionRecord(row) : null;
  };

  return {
    find,

    async open(address, options) {
      for (let attempt = 1; ; attempt += 1) {
        const existing = await find(address);
        if (existing) return { session: existing, created: false };
        try {
          const row = await prisma.$transaction((tx) => createSession(tx, address, options));
          return { session: toSessionRecord(row), created: true };
        } catch (error) {
          // Another open of the same thread committed first: the next turn of the loop reads it.
          if (!isUniqueViolation(error) || attempt >= maxOpenAttempts) throw error;
        }
      }
    },

    async get(sessionId) {
      const row = await prisma.session.findUnique({ where: { id: sessionId } });
      return row ? toSessionRecord(row) : null;
    },

    async setFlags(sessionId, flags) {
      const data = pickDefined(flags, ['pauseRequested', 'paused', 'resetRequested', 'stopRequestedBy', 'runStartStep']);
      await prisma.session.update({ where: { id: sessionId }, data });
    },

    async requestReset(sessionId, segmentId) {
      // One conditional statement: the row decides, not a replica's mirror of it.
      const updated = await prisma.$executeRaw`
        UPDATE sessions SET reset_requested = true
        WHERE id = ${sessionId} AND NOT reset_requested AND (${segmentId}::text IS NULL OR current_segment_id = ${segmentId})`;
      return updated > 0;
    },

    async setBudget(sessionId, usd) {
      await prisma.session.update({ where: { id: sessionId }, data: { budgetUsd: usd } });
    },

    async latestInChannel(channel) {
      const row = await prisma.session.findFirst({
        where: { platform: channel.platform, workspaceId: channel.workspaceId, channelId: channel.channelId },
        orderBy: { createdAt: 'desc' },
      });
      return row ? toSessionRecord(row) : null;
    },

    async withBacklog() {
      // The tail is the last message that is neither init nor a marker: a marker placed after a
      // tool result must not hide the follow-up the tool result still needs. The lateral probe
      // walks the (segment_id, seq) unique index backwards, so each session costs a few index reads.
      const rows = await prisma.$queryRaw<Array<{ id: string }>>`
        SELECT s.id
        FROM sessions s
        WHERE s.reset_requested
           -- A person's remember / forget waits for its summarizer run (paused or not).
           OR EXISTS (SELECT 1 FROM memory_review_events e WHERE e.request_pending AND e.session_id = s.id)
           OR (NOT s.paused AND (
                EXISTS (SELECT 1 FROM steer_messages q WHERE q.session_id = s.id AND q.status = 'queued')
                OR EXISTS (
                  SELECT 1
                  FROM (SELECT m.role, m.tool_call_ids
                        FROM context_messages m
                        WHERE m.segment_id = s.current_segment_id AND NOT m.is_init AND NOT m.is_marker
                        ORDER BY m.seq DESC
                        LIMIT 1) tail
                  WHERE tail.role IN ('user', 'tool')
                     OR (tail.role = 'assistant' AND coalesce(cardinality(tail.tool_call_ids), 0) > 0))))
        ORDER BY s.id`;
      return rows.map((row) => row.id);
    },
  };
}

// Callers may pass a whole SessionRecord; Prisma refuses unknown fields, so copy the four.
function threadKey(address: ThreadAddress): ThreadAddress {
  return { platform: address.platform, workspaceId: address.workspaceId, channelId: address.channelId, threadKey: address.threadKey };
}

/**
 * The memory space key of a thread under a scope; the workspace is always part of the key. Spaces
 * never cross people who did not share the conversation, whatever the scope: a direct conversation
 * and an invite-only thread are spaces of their own, and a private channel, or a conversation
 * people outside the workspace's full members take part in (`shared`), never shares one with
 * public channels: under `workspace` each gets its channel's own space.
 */
export function spaceKey(address: ThreadAddress, scope: MemoryScope): string {
  // An invite-only thread is its own conversation: its members are not the channel's.
  if (address.visibility === 'invited') return `invited:${address.threadKey}`;
  if (address.visibility === 'direct') return scope === 'thread' ? `dm:${address.channelId}/${address.threadKey}` : `dm:${address.channelId}`;
  if ((address.visibility === 'private' || address.visibility === 'shared') && scope === 'workspace') return `private:${address.channelId}`;
  switch (scope) {
    case 'channel':
      return address.channelId;
    case 'thread':
      return `${address.channelId}/${address.threadKey}`;
    case 'workspace':
      return '';
  }
}

/**
 * The conversation that owns a space, from its key (see spaceKey): null for a workspace-wide
 * public space; the thread itself for an invite-only thread.
 */
export function spaceChannel(scope: string, scopeKey: string): string | null {
  const key = scopeKey.replace(/^(dm|private|invited):/, '');
  if (scope === 'workspace' && key === scopeKey) return null;
  const channel = key.split('/')[0] ?? '';
  return channel === '' ? null : channel;
}

async function createSession(
  tx: TransactionClient,
  address: ThreadAddress,
  options: { title: string; scope: MemoryScope; startedBy?: string },
): Promise<Session> {
  // ON CONFLICT DO UPDATE (not DO NOTHING) so RETURNING yields the id of a space that another
  // session of the same channel created concurrently, instead of failing the transaction.
  const spaces = await tx.$queryRaw<Array<{ id: string }>>`
    INSERT INTO memory_spaces (id, platform, workspace_id, scope, scope_key)
    VALUES (${randomUUID()}, ${address.platform}, ${address.workspaceId}, ${options.scope}, ${spaceKey(address, options.scope)})
    ON CONFLICT (platform, workspace_id, scope, scope_key) DO UPDATE SET scope = EXCLUDED.scope
    RETURNING id`;
  const space = spaces[0];
  if (!space) throw new Error('memory space upsert returned no row');
  // current_segment_id has no foreign key, so the session can name its first segment up front.
  const segmentId = randomUUID();
  const session = await tx.session.create({
    data: { ...threadKey(address), title: storableText(options.title), startedBy: options.startedBy ?? null, memorySpaceId: space.id, currentSegmentId: segmentId },
  });
  await tx.segment.create({ data: { id: segmentId, sessionId: session.id, ordinal: 1 } });
  return session;
}

export function toSessionRecord(row: Session): SessionRecord {
  const platform = platforms.find((candidate) => candidate === row.platform);
  if (!platform) throw new Error(`session ${row.id} has an unknown platform "${row.platform}"`);
  return {
    id: row.id,
    platform,
    workspaceId: row.workspaceId,
    channelId: row.channelId,
    threadKey: row.threadKey,
    memorySpaceId: row.memorySpaceId,
    title: row.title,
    startedBy: row.startedBy,
    pauseRequested: row.pauseRequested,
    paused: row.paused,
    resetRequested: row.resetRequested,
    currentSegmentId: row.currentSegmentId,
    budgetUsd: row.budgetUsd,
    stopRequestedBy: row.stopRequestedBy,
    workerSteps: row.workerSteps,
    runStartStep: row.runStartStep,
    traceContext: row.traceContext,
  };
}
