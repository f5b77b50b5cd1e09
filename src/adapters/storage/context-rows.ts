// The rows of the worker context as Postgres holds them: a message's columns (its `content` the
// exact JSON text the model is sent), a segment's, and the statement that marks a tool call begun.
import type { ChatMessage } from '../../core/messages.js';
import { messageText } from '../../core/messages.js';
import { storableText } from '../../core/text-hygiene.js';
import type { SegmentRecord, StoredMessage } from '../../core/store.js';
import { Prisma, type ContextMessage, type Segment } from '../../../prisma/generated/client.js';

/** The columns `messageValues` fills, in its order. */
export const messageColumns = Prisma.raw(
  '(segment_id, seq, role, content, tool_call_id, tool_call_ids, started_tool_call_ids, is_init, is_marker, memory_run_id, awaiting_delivery, search_text)',
);

/** Marks a tool call of the assistant message at `seq` as begun (once); ids are stored as `tool_call_ids` are. */
export function markStarted(segmentId: string, seq: number, callId: string): Prisma.Sql {
  const id = storableText(callId);
  return Prisma.sql`
    UPDATE context_messages SET started_tool_call_ids = array_append(started_tool_call_ids, ${id})
    WHERE segment_id = ${segmentId} AND seq = ${seq} AND NOT (${id} = ANY(started_tool_call_ids))`;
}

/** The VALUES tuple of one context message for `messageColumns` (raw statements on hot paths). */
export function messageValues(segmentId: string, entry: StoredMessage): Prisma.Sql {
  const row = toMessageRow(segmentId, entry);
  return Prisma.sql`(${row.segmentId}, ${row.seq}, ${row.role}, ${row.content}, ${row.toolCallId}, ${row.toolCallIds}::text[],
    ${(entry.startedToolCalls ?? []).map(storableText)}::text[], ${row.isInit}, ${row.isMarker}, ${row.memoryRunId}, ${row.awaitingDelivery}, ${row.searchText})`;
}

/** The row of one context message; `content` is the exact JSON text the model is sent. */
export function toMessageRow(segmentId: string, entry: StoredMessage): Prisma.ContextMessageCreateManyInput {
  const { message } = entry;
  return {
    segmentId,
    seq: entry.seq,
    role: message.role,
    content: JSON.stringify(message),
    toolCallId: message.tool_call_id === undefined ? null : storableText(message.tool_call_id),
    toolCallIds: (message.tool_calls ?? []).map((call) => storableText(call.id)),
    isInit: entry.isInit,
    isMarker: entry.isMarker,
    memoryRunId: entry.memoryRunId,
    awaitingDelivery: entry.awaitingDelivery ?? false,
    // Postgres text cannot hold NUL; `content` is safe because JSON.stringify escapes it.
    searchText: storableText(messageText(message)),
  };
}

export function toStoredMessage(row: Pick<ContextMessage, 'segmentId' | 'seq' | 'content' | 'isInit' | 'isMarker' | 'memoryRunId' | 'startedToolCallIds'>): StoredMessage {
  return {
    seq: row.seq, message: parseMessage(row), isInit: row.isInit, isMarker: row.isMarker, memoryRunId: row.memoryRunId,
    ...(row.startedToolCallIds.length > 0 ? { startedToolCalls: row.startedToolCallIds } : {}),
  };
}

function parseMessage(row: Pick<ContextMessage, 'segmentId' | 'seq' | 'content'>): ChatMessage {
  const parsed: unknown = JSON.parse(row.content);
  if (typeof parsed !== 'object' || parsed === null || !('role' in parsed) || typeof parsed.role !== 'string') {
    throw new Error(`context message ${row.segmentId}#${String(row.seq)} is not a chat message`);
  }
  // Only this module writes the column, always from a ChatMessage.
  return parsed as ChatMessage;
}

export function toSegmentRecord(row: Pick<Segment, 'id' | 'sessionId' | 'ordinal' | 'lastStep' | 'summarizerRounds' | 'deciderRounds' | 'deciderDueIn' | 'contextTokens' | 'contextTokensSeq' | 'carriedMessages'>): SegmentRecord {
  return {
    id: row.id,
    sessionId: row.sessionId,
    ordinal: row.ordinal,
    lastStep: row.lastStep,
    summarizerRounds: row.summarizerRounds,
    deciderRounds: row.deciderRounds,
    deciderDueIn: row.deciderDueIn,
    contextTokens: row.contextTokens,
    contextTokensSeq: row.contextTokensSeq,
    carriedMessages: row.carriedMessages,
  };
}
