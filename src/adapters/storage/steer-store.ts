// The inbound steer queue (R9): written before anything else, idempotent on the platform message.
import { z } from 'zod';
import type { Attachment } from '../../core/store.js';
import type { SteerRecord, SteerStore } from '../../core/store.js';
import { capText, maxMessageChars, storableText } from '../../core/prompts/text-hygiene.js';
import type pg from 'pg';
import { Prisma, type PrismaClient, type SteerMessage } from '../../../prisma/generated/client.js';
import { acceptMessage } from './intake.js';

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
export function storableAttachments(attachments: Attachment[]): Attachment[] {
  return attachments.map(storableAttachment);
}

function storableAttachment(attachment: Attachment): Attachment {
  return { ...attachment, name: storableText(attachment.name), ref: storableText(attachment.ref), ...(attachment.url === undefined ? {} : { url: storableText(attachment.url) }) };
}
