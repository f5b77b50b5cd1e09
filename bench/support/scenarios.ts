// Scripts for the fake model server (test/fakes/fake-model-server.ts), run in the model process.
// A scenario is plain JSON so the benchmark process can send it over IPC.
import type { FakeReply, FakeReplyHandler, FakeRequestBody } from '../../test/fakes/fake-model-server.js';
import { roleOf } from '../../test/support/model-script.js';
import { compactionSummary, mainDocument, stepNotes } from './workload.js';

/** B1: one long task; memory forks and the blocking baseline's compaction calls. */
export interface MemoryScenario {
  kind: 'memory';
  /** Worker steps of the task; the last one is the final answer. */
  steps: number;
  /** Every n-th step calls two tools in one batch. */
  doubleToolEvery: number;
  contextWindow: number;
  /** The decider answers RESET_CONTEXT when its prompt is above this percent of the window. */
  resetAbovePercent: number;
  /** Per-call latencies in milliseconds (already scaled). */
  latencyMs: { worker: number; summarizer: number; decider: number; compaction: number };
  mainDocumentChars: number;
  summaryChars: number;
  /**
   * How the scripted summarizer writes: 'rewrite' sends MAIN.md whole every run (memory_write);
   * 'edit' writes it whole once, then appends the new steps' lines and edits the progress line,
   * as a model given the small-edit tools does.
   */
  summarizerStyle: 'rewrite' | 'edit';
  /** When set, the fake refuses a prompt above this many tokens (400 context_length_exceeded, R19). */
  refuseAboveTokens?: number;
}

/** B2/B3: chat turns; a person's message "(steps=N)" gets N tool steps, then an answer. */
export interface ChatScenario {
  kind: 'chat';
  delayMs: number;
}

export type Scenario = MemoryScenario | ChatScenario;

/** Role as the benchmarks count it: the three Hippo roles plus the baseline's compaction. */
export type BenchRole = 'worker' | 'summarizer' | 'decider' | 'compaction';

/** The first words of the blocking baseline's compaction request. */
export const compactionTag = '<compaction-request';

export function benchRoleOf(body: FakeRequestBody): BenchRole {
  const last = body.messages.at(-1);
  const text = typeof last?.['content'] === 'string' ? last['content'] : '';
  if (last?.['role'] === 'user' && text.startsWith(compactionTag)) return 'compaction';
  return roleOf(body);
}

/** Counters the model process reports back. */
export interface ScenarioCounters {
  byRole: Record<BenchRole, number>;
  /** memory_write results that were not "saved" (version conflicts and the like). */
  failedWrites: number;
}

export function newCounters(): ScenarioCounters {
  return { byRole: { worker: 0, summarizer: 0, decider: 0, compaction: 0 }, failedWrites: 0 };
}

/** The reply handler of a scenario; it updates `counters`. */
export function scenarioHandler(scenario: Scenario, counters: ScenarioCounters): FakeReplyHandler {
  return scenario.kind === 'memory' ? memoryHandler(scenario, counters) : chatHandler(scenario, counters);
}

function memoryHandler(scenario: MemoryScenario, counters: ScenarioCounters): FakeReplyHandler {
  // Per prompt_cache_key (= session id): worker steps so far and the MAIN.md version.
  const workerSteps = new Map<string, number>();
  const mainVersions = new Map<string, number>();
  // The steps the last summary of each session covered (edit style appends only newer ones).
  const summarizedSteps = new Map<string, number>();
  const appendedChars = new Map<string, number>();
  let writes = 0;
  return (body) => {
    const key = body.prompt_cache_key ?? '';
    const role = benchRoleOf(body);
    counters.byRole[role] += 1;
    const last = body.messages.at(-1);
    const lastText = typeof last?.['content'] === 'string' ? last['content'] : '';
    const latency = scenario.latencyMs;
    switch (role) {
      case 'compaction':
        return { content: compactionSummary(workerSteps.get(key) ?? 0, scenario.summaryChars), delayMs: latency.compaction };
      case 'worker': {
        const step = (workerSteps.get(key) ?? 0) + 1;
        workerSteps.set(key, step);
        if (step >= scenario.steps) {
          return { content: `All ${scenario.steps - 1} migration steps are done and every log ended with "finished: ok".`, delayMs: latency.worker };
        }
        const calls = [{ id: `call_${step}_1`, name: 'run_step', arguments: { step, part: 1 } }];
        if (step % scenario.doubleToolEvery === 0) calls.push({ id: `call_${step}_2`, name: 'run_step', arguments: { step, part: 2 } });
        const note = step % 5 === 0 ? { content: `Step ${step - 1} finished cleanly; continuing with step ${step}.` } : {};
        return { ...note, toolCalls: calls, delayMs: latency.worker };
      }
      case 'summarizer': {
        if (last?.['role'] === 'tool') {
          const saved = /(?:saved|appended) \(version (\d+)\)/.exec(lastText);
          if (saved) mainVersions.set(key, Number(saved[1]));
          else counters.failedWrites += 1;
          return { content: 'Updated MAIN.md with the latest migration steps.', delayMs: latency.summarizer };
        }
        writes += 1;
        const steps = workerSteps.get(key) ?? 0;
        // With memory_done the write's result is never read back: the instruction names MAIN.md's version.
        const named = /version (\d+)/.exec(lastText);
        const version = named ? Number(named[1]) : mainVersions.get(key);
        const notes = stepNotes(summarizedSteps.get(key) ?? 0, steps);
        // An edit-style summarizer appends, and restructures (rewrites) once MAIN.md doubled.
        const append = scenario.summarizerStyle === 'edit' && version !== undefined && version > 1 && (appendedChars.get(key) ?? 0) + notes.length < scenario.mainDocumentChars;
        appendedChars.set(key, append ? (appendedChars.get(key) ?? 0) + notes.length : 0);
        // R4: the write and memory_done in one step, so a run reads the context once (a failed
        // write keeps the run going: the next call lands in the branch above).
        const done = { id: `done_${writes}`, name: 'memory_done', arguments: { note: 'Updated MAIN.md with the latest migration steps.' } };
        const reply: FakeReply = {
          toolCalls: [...(append
            ? [{
                id: `append_${writes}`,
                name: 'memory_append',
                arguments: { path: 'MAIN.md', heading: '## Step notes', text: notes, expected_version: version },
              }]
            : [{
                id: `write_${writes}`,
                name: 'memory_write',
                arguments: { path: 'MAIN.md', content: mainDocument(steps, scenario.mainDocumentChars), expected_version: version ?? 1 },
              }]), done],
          delayMs: latency.summarizer,
        };
        summarizedSteps.set(key, steps);
        return reply;
      }
      case 'decider': {
        const tokens = Math.ceil(JSON.stringify(body.messages).length / 4);
        const reset = tokens > (scenario.contextWindow * scenario.resetAbovePercent) / 100;
        const content = reset
          ? 'Most of this context is finished step logs that memory already holds.\nRESET_CONTEXT'
          : 'The context is still mostly relevant to the current task.\nKEEP_CONTEXT';
        return { content, delayMs: latency.decider };
      }
    }
  };
}

function chatHandler(scenario: ChatScenario, counters: ScenarioCounters): FakeReplyHandler {
  return (body) => {
    const role = benchRoleOf(body);
    counters.byRole[role] += 1;
    const delayMs = scenario.delayMs;
    if (role === 'summarizer') return { content: 'no change', delayMs };
    if (role === 'decider') return { content: 'Still relevant.\nKEEP_CONTEXT', delayMs };
    // Steps asked for by the latest person's message, and assistant messages since then.
    let requested = 0;
    let since = 0;
    for (let index = body.messages.length - 1; index >= 0; index -= 1) {
      const message = body.messages[index];
      const text = typeof message?.['content'] === 'string' ? message['content'] : '';
      if (message?.['role'] === 'assistant') since += 1;
      if (message?.['role'] === 'user' && text.includes(' wrote:\n')) {
        requested = Number(/steps=(\d+)/.exec(text)?.[1] ?? 0);
        break;
      }
    }
    if (since < requested) return { toolCalls: [{ name: 'noop', arguments: { n: since + 1 } }], delayMs };
    return { content: `Done (${requested} steps).`, delayMs };
  };
}
