// A person's change of a memory document with its review event (DocumentStore.writeReviewed): the
// compare-and-set, the new version row and the event in one statement, so the review log never
// misses a change nor records one that was not written. On Postgres it goes to the pool as a
// named prepared statement; on PGlite through Prisma.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ConflictError } from '../../core/errors.js';
import { pinText } from '../../core/pinned-lines.js';
import type { DocumentStore } from '../../core/store.js';
import { storableText } from '../../core/text-hygiene.js';
import { Prisma, type MemoryDocument, type PrismaClient } from '../../../prisma/generated/client.js';
import { toDocumentRecord } from './document-review.js';
import { documentColumns } from './document-store.js';
import { storedEvent } from './review-store.js';
import { statementsOn } from './statements.js';

/** The method, on `pool` when it is Postgres's. */
export function createReviewedWrite(prisma: PrismaClient, pool?: pg.Pool): Pick<DocumentStore, 'writeReviewed'> {
  const sql = statementsOn(prisma, pool);
  return {
    async writeReviewed(document, content, author, reason, change) {
      const stored = storableText(content);
      const event = storedEvent(change);
      // The pins the new text still has a line for stay, in their order; a person's change unpins
      // the others (as write() does).
      const lines = [...new Set(stored.split('\n').map(pinText))];
      const rows = await sql.rows<MemoryDocument>(Prisma.sql`
        WITH changed AS (
          UPDATE memory_documents SET content = ${stored}, deleted = false, version = version + 1, updated_at = now(),
            pinned_lines = ARRAY(SELECT pin FROM unnest(pinned_lines) WITH ORDINALITY AS pins (pin, at) WHERE pin = ANY (${lines}::text[]) ORDER BY at)
          WHERE id = ${document.id} AND version = ${document.version}::int AND NOT deleted
          RETURNING *),
        new_version AS (
          INSERT INTO memory_document_versions (id, document_id, version, path, content, deleted, author_kind, author_id, author_name, memory_run_id, session_id, reason)
          SELECT ${randomUUID()}, id, version, path, content, false, 'person', ${author.userId}, ${author.name}, NULL, ${author.sessionId ?? null}, ${storableText(reason.replace(/\s+/g, ' ').slice(0, 300))}
          FROM changed),
        review_event AS (
          INSERT INTO memory_review_events (space_id, kind, document_path, author_id, author_name, text, session_id)
          SELECT space_id, ${event.kind}, path, ${event.authorId}, ${event.authorName}, ${event.text}, ${event.sessionId}
          FROM changed)
        SELECT ${documentColumns} FROM changed`);
      const [row] = rows;
      if (!row) {
        throw new ConflictError(`${document.path} changed since you read it (you read version ${String(document.version)}); read it again and reapply your edit`);
      }
      return toDocumentRecord(row);
    },
  };
}
