// B3's load: `sessions` sessions, each sending its first message within `rampMs` and the next one
// as soon as the previous answer came (a tool step and an answer per message). Shared by the
// one-process run and each process of a scale-out run (b3-replica.ts).
import { newThread, type ChatAgent } from './chat-agent.js';
import { sleep } from './stats.js';

export interface DriveResult {
  turnLatency: number[];
  failedTurns: number;
  /** Failure messages (first 240 characters) and how often each occurred. */
  failures: Map<string, number>;
  sessionIds: Set<string>;
  wallMs: number;
}

export async function driveSessions(agent: ChatAgent, sessions: number, settings: { turns: number; rampMs: number }): Promise<DriveResult> {
  const threads = Array.from({ length: sessions }, () => newThread());
  const started = performance.now();
  const turnLatency: number[] = [];
  let failedTurns = 0;
  const failures = new Map<string, number>();
  const sessionIds = new Set<string>();
  await Promise.all(
    threads.map(async (thread, index) => {
      // Each session's first message arrives on its own, as chat events do (not all in one tick).
      await sleep((index * settings.rampMs) / sessions);
      for (let turn = 1; turn <= settings.turns; turn += 1) {
        try {
          const result = await agent.turn(thread, turn, 1);
          turnLatency.push(result.answeredAt - result.sentAt);
          sessionIds.add(result.session.id);
        } catch (error) {
          failedTurns += 1;
          const key = String(error).replace(/t\d+-\d+/g, '…').slice(0, 240);
          failures.set(key, (failures.get(key) ?? 0) + 1);
        }
      }
    }),
  );
  return { turnLatency, failedTurns, failures, sessionIds, wallMs: performance.now() - started };
}
