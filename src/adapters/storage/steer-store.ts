// The inbound steer queue (R9): written before anything else, idempotent on the platform message.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import type { Accepted, ArrivingMessage, Attachment, SteerRecord, SteerStore } from '../../core/store.js';
import { capText, maxMessageChars, storableText } from '../../core/prompts/text-hygiene.js';
import { Prisma, type PrismaClient, type Session, type SteerMessage } from '../../../prisma/generated/client.js';
import { spaceKey, toSessionRecord } from './session-store.js';
import { nameOf } from './statements.js';
import { wakeupChannel } from './wakeups.js';

const statuses: ReadonlyArray<SteerRecord['status']> = ['queued', 'taken', 'withdrawn'];

/** Creates the Prisma-backed SteerStore; `ackPool` (Postgres) runs the intake statement. */
export function createSteerStore(prisma: PrismaClient, ackPool?: pg.Pool): SteerStore {
  return {
    accept: (message) => acceptMessage(prisma, ackPool, message),

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
// platform is acknowledged once this statement has committed; on Postgres it runs on a small pool
// of its own, so an ack never waits for a connection behind agent work.

// Every sub-statement sees the same snapshot and runs once (the inserts whether or not the final
// SELECT reads them; the notification because it does); the foreign keys of the new segment and
// steer are checked at the end of the statement, when the new session row exists. A thread opened
// concurrently by another replica makes `created` empty (ON CONFLICT DO NOTHING waits for it) and
// `existing` did not see it: the statement returns no session and is run again.
const statement = `
WITH existing AS (
  SELECT * FROM sessions WHERE platform = $1 AND workspace_id = $2 AND channel_id = $3 AND thread_key = $4
), space AS (
  INSERT INTO memory_spaces (id, platform, workspace_id, scope, scope_key)
  SELECT $6, $1, $2, $9, $10 WHERE $5::boolean AND NOT EXISTS (SELECT 1 FROM existing)
  ON CONFLICT (platform, workspace_id, scope, scope_key) DO UPDATE SET scope = EXCLUDED.scope
  RETURNING id
), created AS (
  INSERT INTO sessions (id, platform, workspace_id, channel_id, thread_key, memory_space_id, title, started_by, current_segment_id, updated_at)
  SELECT $7, $1, $2, $3, $4, space.id, $11, $12, $8, now() AT TIME ZONE 'UTC' FROM space
  ON CONFLICT (platform, workspace_id, channel_id, thread_key) DO NOTHING
  RETURNING *
), first_segment AS (
  INSERT INTO segments (id, session_id, ordinal) SELECT $8, created.id, 1 FROM created RETURNING id
), session AS (
  SELECT * FROM existing UNION ALL SELECT * FROM created
), event AS (
  INSERT INTO processed_events (key) SELECT $18 WHERE $18::text IS NOT NULL ON CONFLICT DO NOTHING RETURNING key
), steer AS (
  INSERT INTO steer_messages (session_id, platform_message_key, author_id, author_name, text, attachments)
  SELECT session.id, $13, $14, $15, $16, $17::jsonb FROM session
  ON CONFLICT (platform_message_key) DO NOTHING
  RETURNING *
), woke AS (
  SELECT pg_notify($20, steer.session_id) FROM steer WHERE $19::boolean
)
SELECT (SELECT row_to_json(session) FROM session LIMIT 1) AS session,
       (SELECT row_to_json(steer) FROM steer) AS steer,
       (SELECT count(*) FROM created)::int AS created,
       (SELECT count(*) FROM woke)::int AS woke`;

interface Row {
  session: Record<string, unknown> | null;
  steer: Record<string, unknown> | null;
  created: number;
  woke: number;
}

// Another replica opening the same thread at the same moment costs one more turn; the bound only
// stops a pathological loop.
const maxAttempts = 5;

/**
 * Stores an arriving message in one statement. `pool` (Postgres): the statement runs there and
 * notifies the drivers itself; without it (PGlite) it runs through Prisma and the caller notifies.
 */
async function acceptMessage(prisma: PrismaClient, pool: pg.Pool | undefined, message: ArrivingMessage): Promise<Accepted> {
  const { address, start, steer } = message;
  for (let attempt = 1; ; attempt += 1) {
    const values = [
      address.platform, address.workspaceId, address.channelId, address.threadKey,
      start !== undefined, randomUUID(), randomUUID(), randomUUID(),
      start?.scope ?? 'channel', start ? spaceKey(address, start.scope) : '', storableText(start?.title ?? ''), start?.startedBy ?? null,
      storableText(steer.platformMessageKey), storableText(steer.authorId), storableText(steer.authorName), storableText(steer.text),
      steer.attachments?.length ? JSON.stringify(storableAttachments(steer.attachments)) : null,
      message.eventKey === undefined ? null : storableText(message.eventKey), pool !== undefined, wakeupChannel,
    ];
    const rows = pool ? (await pool.query<Row>({ name: nameOf(statement), text: statement, values })).rows : await prisma.$queryRawUnsafe<Row[]>(statement, ...values);
    const row = rows[0];
    if (!row) throw new Error('the intake statement returned no row');
    if (!row.session) {
      // No session: none to start (chatter), or another replica created it after our snapshot.
      if (!start || attempt >= maxAttempts) return { session: null, steer: null, inserted: false, created: false, notified: false };
      continue;
    }
    const session = toSessionRecord(sessionRow(row.session));
    if (row.steer) return { session, steer: toSteerRecord(steerRow(row.steer)), inserted: true, created: row.created > 0, notified: row.woke > 0 };
    // A redelivery: the message is queued already (read it as it is).
    const existing = await prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: storableText(steer.platformMessageKey) } });
    return { session, steer: toSteerRecord(existing), inserted: false, created: row.created > 0, notified: false };
  }
}

// row_to_json names columns as the table does and writes timestamps without a zone (stored as UTC).

function sessionRow(json: Record<string, unknown>): Session {
  return {
    id: String(json['id']), platform: String(json['platform']), workspaceId: String(json['workspace_id']), channelId: String(json['channel_id']),
    threadKey: String(json['thread_key']), memorySpaceId: String(json['memory_space_id']), title: String(json['title']),
    startedBy: nullableString(json['started_by']), pauseRequested: json['pause_requested'] === true, paused: json['paused'] === true,
    resetRequested: json['reset_requested'] === true, budgetUsd: typeof json['budget_usd'] === 'number' ? json['budget_usd'] : null,
    stopRequestedBy: nullableString(json['stop_requested_by']), currentSegmentId: nullableString(json['current_segment_id']),
    createdAt: utcDate(json['created_at']), updatedAt: utcDate(json['updated_at']),
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
