// R23: tool approvals on Postgres. The request is an insert-if-absent on the call's place; the
// decision is one conditional UPDATE from 'pending', so of two clicks (twice delivered, on two
// replicas, after a restart) or a click racing the timeout exactly one decides.
import { randomUUID } from 'node:crypto';
import type { ApprovalRecord, ApprovalStatus, ApprovalStore } from '../../core/approval-store.js';
import type { PrismaClient, ToolApproval } from '../../../prisma/generated/client.js';
import { storableText } from '../../core/text-hygiene.js';

const statuses: readonly ApprovalStatus[] = ['pending', 'approved', 'denied', 'expired', 'cancelled'];

/** Arguments kept per call (the card shows less; the model's own copy is in the context). */
export const maxStoredArgumentChars = 16_000;

/** Creates the Prisma-backed ApprovalStore. */
export function createApprovalStore(prisma: PrismaClient): ApprovalStore {
  const get = async (id: string): Promise<ApprovalRecord | null> => {
    const row = await prisma.toolApproval.findUnique({ where: { id } });
    return row ? toRecord(row) : null;
  };
  return {
    get,

    async request(approval) {
      const id = randomUUID();
      // Who asked for the run: the author of the last message the session took.
      const inserted = await prisma.$executeRaw`
        INSERT INTO tool_approvals (id, session_id, segment_id, message_seq, call_id, tool, arguments, run_start_step, requested_by, expires_at)
        VALUES (${id}, ${approval.sessionId}, ${approval.segmentId}, ${approval.messageSeq}, ${storableText(approval.callId)}, ${storableText(approval.tool)},
          ${storableText(approval.arguments.slice(0, maxStoredArgumentChars))}, ${approval.runStartStep},
          coalesce((SELECT author_name FROM steer_messages WHERE session_id = ${approval.sessionId} AND status = 'taken' ORDER BY id DESC LIMIT 1), ''),
          now() + ${approval.timeoutMs} * interval '1 millisecond')
        ON CONFLICT (segment_id, message_seq, call_id) DO NOTHING`;
      const row = await prisma.toolApproval.findUnique({
        where: { segmentId_messageSeq_callId: { segmentId: approval.segmentId, messageSeq: approval.messageSeq, callId: storableText(approval.callId) } },
      });
      if (!row) throw new Error(`tool approval of call ${approval.callId} vanished`);
      return { approval: toRecord(row), created: inserted > 0 };
    },

    async decide(id, decision) {
      // A person cannot approve what has expired; the timeout and a Stop can always close it.
      const person = decision.status === 'approved' || decision.status === 'denied';
      const decided = await prisma.$executeRaw`
        UPDATE tool_approvals
        SET status = ${decision.status}, scope = ${decision.scope ?? 'call'}, decided_by_id = ${decision.byId}, decided_by_name = ${decision.byName === null ? null : storableText(decision.byName)},
            note = ${decision.note == null ? null : storableText(decision.note)}, decided_at = now()
        WHERE id = ${id} AND status = 'pending' AND (${!person} OR expires_at > now())`;
      return { approval: await get(id), decided: decided > 0 };
    },

    async approvedForRun(sessionId, runStartStep, tool) {
      const row = await prisma.toolApproval.findFirst({ where: { sessionId, runStartStep, tool, status: 'approved', scope: 'run' }, select: { id: true } });
      return row !== null;
    },

    async recent(sessionId, limit) {
      const rows = await prisma.toolApproval.findMany({ where: { sessionId }, orderBy: { createdAt: 'desc' }, take: limit });
      return rows.map(toRecord);
    },
  };
}

function toRecord(row: ToolApproval): ApprovalRecord {
  return {
    id: row.id,
    sessionId: row.sessionId,
    segmentId: row.segmentId,
    messageSeq: row.messageSeq,
    callId: row.callId,
    tool: row.tool,
    arguments: row.arguments,
    runStartStep: row.runStartStep,
    requestedBy: row.requestedBy,
    status: statuses.find((status) => status === row.status) ?? 'pending',
    scope: row.scope === 'run' ? 'run' : 'call',
    decidedById: row.decidedById,
    decidedByName: row.decidedByName,
    note: row.note,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    decidedAt: row.decidedAt,
  };
}
