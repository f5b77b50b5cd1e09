// The inbound steer queue (R9): written before anything else, idempotent on the platform message.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import type { Accepted, ArrivingMessage, Attachment, SteerRecord, SteerStore } from '../../core/store.js';
import { capText, maxMessageChars, storableText } from '../../core/text-hygiene.js';
import { Prisma, type PrismaClient, type Session, type SteerMessage } from '../../../prisma/generated/client.js';
import { spaceKey, toSessionRecord } from './session-store.js';
import { nameOf } from './statements.js';
import { isTransientDatabaseError, isWriteConflict } from './storage-errors.js';
import { wakeupChannel } from './wakeups.js';
import { WriteBatch } from './write-batch.js';

const statuses: ReadonlyArray<SteerRecord['status']> = ['queued', 'taken', 'withdrawn'];

/** Creates the Prisma-backed SteerStore; `ackPool` (Postgres) runs the intake statement. */
export function createSteerStore(prisma: PrismaClient, ackPool?: pg.Pool): SteerStore {
  return {
    accept: intake(prisma, ackPool),

    async enqueue(steer) {
      // Insert-if-absent in one statement: a redelivered platform event finds the row already there
      // (and only then costs a second statement, to read it).
      const inserted = await prisma.$queryRaw<SteerMessage[]>`
        INSERT INTO steer_messages (session_id, platform_message_key, author_id, author_name, text, attachments)
        VALUES (${steer.sessionId}, ${storableText(steer.platformMessageKey)}, ${storableText(steer.authorId)}, ${storableText(steer.authorName)}, ${storableText(steer.text)},
                ${steer.attachments?.length ? JSON.stringify(storableAttachments(steer.attachments)) : null}::jsonb)
        ON CONFLICT (platform_message_key) DO NOTHING
        RETURNING ${steerColumns}`;
      const row = inserted[0] ?? (await prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: steer.platformMessageKey } }));
      return { steer: toSteerRecord(row), inserted: inserted.length > 0 };
    },

    async edit(platformMessageKey, text) {
      const { count } = await prisma.steerMessage.updateMany({ where: { platformMessageKey, status: 'queued' }, data: { text: storableText(capText(text, maxMessageChars)) } });
      return count > 0;
    },

    async withdraw(platformMessageKey) {
      const { count } = await prisma.steerMessage.updateMany({
        where: { platformMessageKey, status: 'queued' },
        data: { status: 'withdrawn' },
      });
      return count > 0;
    },

    countQueued(sessionId) {
      return prisma.steerMessage.count({ where: { sessionId, status: 'queued' } });
    },
  };
}

/** The columns of a steer row under the Prisma model's field names, for raw statements. */
export const steerColumns = Prisma.raw(
  'id, session_id AS "sessionId", platform_message_key AS "platformMessageKey", author_id AS "authorId", ' +
    'author_name AS "authorName", text, attachments, status, received_at AS "receivedAt", taken_at AS "takenAt"',
);

/** Maps a steer row to core's record (the BigInt id fits a number for any realistic queue). */
export function toSteerRecord(row: SteerMessage): SteerRecord {
  const status = statuses.find((candidate) => candidate === row.status);
  if (!status) throw new Error(`steer message ${String(row.id)} has an unknown status "${row.status}"`);
  return {
    id: Number(row.id),
    sessionId: row.sessionId,
    platformMessageKey: row.platformMessageKey,
    authorId: row.authorId,
    authorName: row.authorName,
    text: row.text,
    attachments: attachmentsOf(row.attachments),
    status,
    receivedAt: row.receivedAt,
  };
}

const storedAttachments = z.array(z.object({
  name: z.string(), mimeType: z.string().nullable(), size: z.number(), ref: z.string(), url: z.string().optional(),
}));

/** The attachments a row holds; a row that cannot be read has none (it is still delivered as text). */
function attachmentsOf(value: unknown): Attachment[] {
  if (value === null || value === undefined) return [];
  const parsed = storedAttachments.safeParse(value);
  if (!parsed.success) return [];
  return parsed.data.map(({ url, ...rest }) => (url === undefined ? rest : { ...rest, url }));
}

/** What platforms sent is stored as text Postgres can hold. */
function storableAttachments(attachments: Attachment[]): Attachment[] {
  return attachments.map(storableAttachment);
}

function storableAttachment(attachment: Attachment): Attachment {
  return { ...attachment, name: storableText(attachment.name), ref: storableText(attachment.ref), ...(attachment.url === undefined ? {} : { url: storableText(attachment.url) }) };
}

// A person's message arriving (accept), stored in one statement (docs/operations.md "The ack
// path"): the platform event recorded as processed, the thread's session found or created with its
// memory space and first segment, the message queued and, on Postgres, the drivers notified. The
// platform is acknowledged once this statement has committed. On Postgres it runs on a small pool
// of its own, so an ack never waits for a connection behind agent work, and messages arriving
// while every connection of that pool is busy go together in the next statement (write-batch.ts):
// one statement stores a batch, one row per message.

// Every sub-statement sees the same snapshot and runs once (the inserts whether or not the final
// SELECT reads them; the notification because it does); the foreign keys of the new segments and
// steers are checked at the end of the statement, when the new session rows exist. Messages that
// open the same new thread get one session, from the first of them. A thread opened concurrently
// by another statement makes `created` skip it (ON CONFLICT DO NOTHING waits for it) and
// `existing` did not see it: its messages come back without a session and are stored again.
// Inserts go in one order (threads, spaces, then messages by arrival) so that two concurrent
// batches meet no deadlock on the threads they both open.
const statement = `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                       $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::jsonb[], $18::text[])
    WITH ORDINALITY AS i(platform, workspace_id, channel_id, thread_key, start, space_id, session_id, segment_id, scope, scope_key,
                         title, started_by, message_key, author_id, author_name, text, attachments, event_key, ordinal)
), existing AS (
  SELECT s.* FROM sessions s
  WHERE (s.platform, s.workspace_id, s.channel_id, s.thread_key) IN (SELECT platform, workspace_id, channel_id, thread_key FROM input)
), opening AS (
  SELECT DISTINCT ON (platform, workspace_id, channel_id, thread_key) * FROM input i
  WHERE i.start AND NOT EXISTS (
    SELECT 1 FROM existing e WHERE (e.platform, e.workspace_id, e.channel_id, e.thread_key) = (i.platform, i.workspace_id, i.channel_id, i.thread_key))
  ORDER BY platform, workspace_id, channel_id, thread_key, ordinal
), space AS (
  INSERT INTO memory_spaces (id, platform, workspace_id, scope, scope_key)
  SELECT DISTINCT ON (platform, workspace_id, scope, scope_key) space_id, platform, workspace_id, scope, scope_key FROM opening
  ORDER BY platform, workspace_id, scope, scope_key, ordinal
  ON CONFLICT (platform, workspace_id, scope, scope_key) DO UPDATE SET scope = EXCLUDED.scope
  RETURNING id, platform, workspace_id, scope, scope_key
), created AS (
  INSERT INTO sessions (id, platform, workspace_id, channel_id, thread_key, memory_space_id, title, started_by, current_segment_id, updated_at)
  SELECT o.session_id, o.platform, o.workspace_id, o.channel_id, o.thread_key, space.id, o.title, o.started_by, o.segment_id, now() AT TIME ZONE 'UTC'
  FROM opening o JOIN space ON (space.platform, space.workspace_id, space.scope, space.scope_key) = (o.platform, o.workspace_id, o.scope, o.scope_key)
  ORDER BY o.platform, o.workspace_id, o.channel_id, o.thread_key
  ON CONFLICT (platform, workspace_id, channel_id, thread_key) DO NOTHING
  RETURNING *
), first_segment AS (
  INSERT INTO segments (id, session_id, ordinal) SELECT current_segment_id, id, 1 FROM created RETURNING id
), session AS (
  SELECT * FROM existing UNION ALL SELECT * FROM created
), event AS (
  INSERT INTO processed_events (key) SELECT event_key FROM input WHERE event_key IS NOT NULL ON CONFLICT DO NOTHING RETURNING key
), steer AS (
  INSERT INTO steer_messages (session_id, platform_message_key, author_id, author_name, text, attachments)
  SELECT s.id, i.message_key, i.author_id, i.author_name, i.text, i.attachments
  FROM input i JOIN session s ON (s.platform, s.workspace_id, s.channel_id, s.thread_key) = (i.platform, i.workspace_id, i.channel_id, i.thread_key)
  ORDER BY i.ordinal
  ON CONFLICT (platform_message_key) DO NOTHING
  RETURNING *
), woke AS (
  SELECT pg_notify($20, d.session_id) FROM (SELECT DISTINCT session_id FROM steer) d WHERE $19::boolean
)
SELECT row_to_json(s) AS session, row_to_json(st) AS steer, o.ordinal IS NOT NULL AS created, (SELECT count(*) FROM woke)::int AS woke
FROM input i
LEFT JOIN session s ON (s.platform, s.workspace_id, s.channel_id, s.thread_key) = (i.platform, i.workspace_id, i.channel_id, i.thread_key)
LEFT JOIN steer st ON st.platform_message_key = i.message_key
LEFT JOIN created c ON c.id = s.id
LEFT JOIN opening o ON o.session_id = c.id AND o.ordinal = i.ordinal
ORDER BY i.ordinal`;

interface Row {
  session: Record<string, unknown> | null;
  steer: Record<string, unknown> | null;
  created: boolean;
  woke: number;
}

// Another replica opening the same thread at the same moment costs one more turn; the bound only
// stops a pathological loop.
const maxAttempts = 5;

/** Messages per statement, and statements in flight at once (the intake pool's connections). */
const batchLimits = { maxBatch: 100, maxInFlight: 4 };

/**
 * Stores arriving messages, each in one statement. `pool` (Postgres): the statements run there
 * (messages arriving together share one) and notify the drivers themselves; without it (PGlite)
 * each message runs alone through Prisma and the caller notifies.
 */
function intake(prisma: PrismaClient, pool: pg.Pool | undefined): (message: ArrivingMessage) => Promise<Accepted> {
  const store = (messages: ArrivingMessage[]) => acceptAll(prisma, pool, messages);
  if (!pool) return async (message) => (await store([message]))[0]!;
  const batch = new WriteBatch<ArrivingMessage, Accepted>(store, {
    ...batchLimits,
    keyOf: (message) => message.steer.platformMessageKey,
    // A deadlock or a conflict between two batches: each message alone goes through.
    splitAfter: (error) => !isTransientDatabaseError(error) || isWriteConflict(error),
  });
  return (message) => batch.add(message);
}

/** One statement for `messages` (and one more for those a concurrent replica's new thread made miss). */
async function acceptAll(prisma: PrismaClient, pool: pg.Pool | undefined, messages: ArrivingMessage[]): Promise<Accepted[]> {
  const results: Array<Accepted | undefined> = [];
  let pending = messages.map((message, index) => ({ message, index }));
  for (let attempt = 1; pending.length > 0; attempt += 1) {
    const values = valuesOf(pending.map(({ message }) => message), pool !== undefined);
    const rows = pool ? (await pool.query<Row>({ name: nameOf(statement), text: statement, values })).rows : await prisma.$queryRawUnsafe<Row[]>(statement, ...values);
    if (rows.length !== pending.length) throw new Error(`the intake statement returned ${rows.length} rows for ${pending.length} messages`);
    const again: typeof pending = [];
    for (const [position, { message, index }] of pending.entries()) {
      const row = rows[position]!;
      if (row.session) results[index] = await accepted(prisma, message, row.session, row);
      // No session: none to start (chatter), or another replica created it after our snapshot.
      else if (message.start && attempt < maxAttempts) again.push({ message, index });
      else results[index] = { session: null, steer: null, inserted: false, created: false, notified: false };
    }
    pending = again;
  }
  return results as Accepted[];
}

/** The statement's parameters: one array per column, one element per message. */
function valuesOf(messages: ArrivingMessage[], notify: boolean): unknown[] {
  const column = <T>(pick: (message: ArrivingMessage) => T) => messages.map(pick);
  return [
    column((m) => m.address.platform), column((m) => m.address.workspaceId), column((m) => m.address.channelId), column((m) => m.address.threadKey),
    column((m) => m.start !== undefined), column(() => randomUUID()), column(() => randomUUID()), column(() => randomUUID()),
    column((m) => m.start?.scope ?? 'channel'), column((m) => (m.start ? spaceKey(m.address, m.start.scope) : '')),
    column((m) => storableText(m.start?.title ?? '')), column((m) => m.start?.startedBy ?? null),
    column((m) => storableText(m.steer.platformMessageKey)), column((m) => storableText(m.steer.authorId)),
    column((m) => storableText(m.steer.authorName)), column((m) => storableText(m.steer.text)),
    column((m) => (m.steer.attachments?.length ? JSON.stringify(storableAttachments(m.steer.attachments)) : null)),
    column((m) => (m.eventKey === undefined ? null : storableText(m.eventKey))), notify, wakeupChannel,
  ];
}

/** One message's outcome from its row of the statement. */
async function accepted(prisma: PrismaClient, message: ArrivingMessage, sessionJson: Record<string, unknown>, row: Row): Promise<Accepted> {
  const session = toSessionRecord(sessionRow(sessionJson));
  if (row.steer) return { session, steer: toSteerRecord(steerRow(row.steer)), inserted: true, created: row.created, notified: row.woke > 0 };
  // A redelivery: the message is queued already (read it as it is).
  const existing = await prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: storableText(message.steer.platformMessageKey) } });
  return { session, steer: toSteerRecord(existing), inserted: false, created: row.created, notified: false };
}

// row_to_json names columns as the table does and writes timestamps without a zone (stored as UTC).

function sessionRow(json: Record<string, unknown>): Session {
  return {
    id: String(json['id']), platform: String(json['platform']), workspaceId: String(json['workspace_id']), channelId: String(json['channel_id']),
    threadKey: String(json['thread_key']), memorySpaceId: String(json['memory_space_id']), title: String(json['title']),
    startedBy: nullableString(json['started_by']), pauseRequested: json['pause_requested'] === true, paused: json['paused'] === true,
    resetRequested: json['reset_requested'] === true, budgetUsd: typeof json['budget_usd'] === 'number' ? json['budget_usd'] : null,
    stopRequestedBy: nullableString(json['stop_requested_by']), currentSegmentId: nullableString(json['current_segment_id']),
    workerSteps: typeof json['worker_steps'] === 'number' ? json['worker_steps'] : 0, runStartStep: typeof json['run_start_step'] === 'number' ? json['run_start_step'] : 0,
    traceContext: nullableString(json['trace_context']), createdAt: utcDate(json['created_at']), updatedAt: utcDate(json['updated_at']),
  };
}

function steerRow(json: Record<string, unknown>): SteerMessage {
  return {
    id: BigInt(String(json['id'])), sessionId: String(json['session_id']), platformMessageKey: String(json['platform_message_key']),
    authorId: String(json['author_id']), authorName: String(json['author_name']), text: String(json['text']),
    attachments: (json['attachments'] ?? null) as SteerMessage['attachments'], status: String(json['status']),
    receivedAt: utcDate(json['received_at']), takenAt: json['taken_at'] === null || json['taken_at'] === undefined ? null : utcDate(json['taken_at']),
  };
}

function nullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function utcDate(value: unknown): Date {
  const text = String(value);
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`);
}
