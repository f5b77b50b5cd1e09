// The memory's promises under chaos (issue 28), from the database after the run: one summarizer
// per segment at a time (R3) unless the first one's replica lost its lease, no memory run left
// 'running' once the run settled (a dead replica's runs are failed by the next holder, R18), no
// reset without a request (no duplicate reset, R8), and nothing a reset dropped that no succeeded
// summarizer had seen (the carry-over, R6).
import type { ChaosDatabase, SegmentMessage } from './chaos-database.js';

/** Figures of the memory checks; the problem figures are 0 in a good run. */
export interface MemoryFigures {
  memoryRuns: Record<string, number>;
  /** Succeeded summarizers of one segment that overlapped in time (problems). */
  summarizerOverlaps: number;
  /** The same, in a session whose lease was lost meanwhile (allowed: the holder could not know). */
  summarizerOverlapsAfterLeaseLoss: number;
  runsLeftRunning: number;
  /** Segments beyond 1 + the resets asked for in their session. */
  unrequestedResets: number;
  /** Person messages after the last succeeded summarizer's marker missing from the next segment. */
  carryOverLosses: number;
}

/** What the memory checks read: the database, and the sessions whose lease a replica lost or that hit the hard limit. */
export interface MemoryCheckInputs {
  database: Pick<ChaosDatabase, 'overlappingSummarizers' | 'memoryRunStatuses' | 'segmentsAndResetRequests' | 'segmentMessages'>;
  /** Session id → log messages of the replicas about it (lease-lost, context-full, …). */
  sessionLogs: ReadonlyMap<string, readonly string[]>;
}

/** A reset the system asks for itself (R19), besides the decider's. */
const selfRequestedResets = ['context-full', 'context-too-long-reset'];
const problemsPerKind = 10;

export async function checkMemory({ database, sessionLogs }: MemoryCheckInputs): Promise<{ figures: MemoryFigures; problems: string[] }> {
  const problems: string[] = [];
  const add = (kind: string, lines: string[]) => problems.push(...lines.slice(0, problemsPerKind).map((line) => `${kind}: ${line}`));
  const logs = (sessionId: string) => sessionLogs.get(sessionId) ?? [];

  const overlaps = await database.overlappingSummarizers();
  const [afterLeaseLoss, unexplained] = partition(overlaps, (overlap) => logs(overlap.sessionId).includes('lease-lost'));
  add('two summarizers at once', unexplained.map((overlap) => `session ${overlap.sessionId} segment ${overlap.segmentId}: runs ${overlap.runs.join(' and ')} both succeeded and overlapped`));

  const memoryRuns = await database.memoryRunStatuses();
  const runsLeftRunning = Object.entries(memoryRuns).filter(([key]) => key.endsWith(' running')).reduce((sum, [, n]) => sum + n, 0);
  if (runsLeftRunning) add('memory runs', [`${runsLeftRunning} memory runs still 'running' after the run settled`]);

  const unrequested = (await database.segmentsAndResetRequests()).flatMap((session) => {
    const selfRequested = logs(session.sessionId).filter((message) => selfRequestedResets.includes(message)).length;
    const excess = session.segments - (1 + session.deciderRequests + selfRequested);
    return excess > 0 ? [{ ...session, excess, selfRequested }] : [];
  });
  add('reset without request', unrequested.map((session) => `session ${session.sessionId}: ${session.segments} segments for ${session.deciderRequests} decider and ${session.selfRequested} hard-limit reset requests`));

  const losses = carryOverLosses(await database.segmentMessages());
  add('carry-over', losses);

  return {
    figures: {
      memoryRuns,
      summarizerOverlaps: unexplained.length,
      summarizerOverlapsAfterLeaseLoss: afterLeaseLoss.length,
      runsLeftRunning,
      unrequestedResets: unrequested.reduce((sum, session) => sum + session.excess, 0),
      carryOverLosses: losses.length,
    },
    problems,
  };
}

/**
 * R6: a reset carries over every conversational message after the latest marker whose summarizer
 * succeeded. Checked for person messages (tool results may become stubs, R20), with final run
 * statuses: a run recorded succeeded only later (a late success) moves the boundary later, so
 * the check asks for no more than the reset had to carry. A carry-over trimmed to fit (R20, with
 * its "not carried over" note) is not checked.
 */
export function carryOverLosses(segments: ReadonlyArray<{ sessionId: string; ordinal: number; carried: number; messages: SegmentMessage[] }>): string[] {
  const bySession = new Map<string, typeof segments[number][]>();
  for (const segment of segments) bySession.set(segment.sessionId, [...(bySession.get(segment.sessionId) ?? []), segment]);
  const losses: string[] = [];
  for (const [sessionId, list] of bySession) {
    const ordered = [...list].sort((left, right) => left.ordinal - right.ordinal);
    for (const [index, before] of ordered.entries()) {
      const after = ordered[index + 1];
      if (!after) continue;
      const boundary = before.messages.findLastIndex((message) => message.isMarker && message.runStatus === 'succeeded');
      const owed = before.messages.slice(boundary + 1).filter((message) => !message.isInit && !message.isMarker && message.role === 'user');
      const initCount = after.messages.filter((message) => message.isInit).length;
      const carried = after.messages.slice(initCount, initCount + after.carried);
      if (carried.some((message) => message.role === 'user' && message.text.includes('were not carried over'))) continue;
      const carriedTexts = new Set(carried.filter((message) => message.role === 'user').map((message) => message.text));
      for (const message of owed) {
        if (!carriedTexts.has(message.text)) losses.push(`session ${sessionId} segment ${before.ordinal}→${after.ordinal}: "${message.text.slice(0, 60)}" was neither summarized nor carried`);
      }
    }
  }
  return losses;
}

function partition<T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] {
  return [items.filter(test), items.filter((item) => !test(item))];
}
