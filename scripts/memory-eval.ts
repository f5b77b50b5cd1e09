// A memory eval anyone can run against their own OpenAI-compatible model:
//   npm run eval:memory -- --base-url http://localhost:11434/v1 --model qwen3:32b [--api-key …]
//     [--window 16000] [--database-url postgresql://…] [--out eval-memory-report.json]
// One scripted conversation: facts are stated early, several tasks paste long logs that force
// resets (the window is kept small on purpose, R19), then questions need the early facts. It
// reports recall, resets (decided by a decider / forced by the hard limit), cost by role and the
// prompt-cache ratio, and writes them as JSON. Without --database-url it uses an embedded database
// in a temporary directory. The test suite runs it against the fake model only (a smoke test of
// the harness, not of any model's quality).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { openDatabase, type Database } from '../src/adapters/storage/database.js';
import { buildAgent } from '../src/build-agent.js';
import { parseConfig } from '../src/config.js';
import type { AgentEvent } from '../src/core/events.js';
import { costOf, pricesFor } from '../src/core/prices.js';
import { createLogger } from '../src/log.js';

/** A fact stated early, the question that needs it, and words a right answer contains. */
export interface EvalFact {
  statement: string;
  question: string;
  expect: string[];
}

export const evalFacts: EvalFact[] = [
  { statement: 'Our staging database is called heron-7.', question: 'What is our staging database called?', expect: ['heron-7'] },
  { statement: 'Deploys happen only on Tuesdays at 14:00 UTC.', question: 'When are we allowed to deploy?', expect: ['tuesday', '14:00'] },
  { statement: 'The on-call engineer this month is Mirela Okafor.', question: 'Who is on call this month?', expect: ['mirela'] },
  { statement: 'The new checkout is behind the feature flag CHECKOUT_V3.', question: 'Which feature flag hides the new checkout?', expect: ['checkout_v3'] },
  { statement: 'The billing service is written in Go 1.22.', question: 'Which language and version is the billing service written in?', expect: ['go', '1.22'] },
];

export interface MemoryEvalOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** The context window Hippo assumes (small, so the tasks force resets). */
  contextWindow: number;
  /** Long-log tasks between the facts and the questions. */
  tasks: number;
  /** An open database (tests); else `databaseUrl`, else an embedded one in a temporary directory. */
  database?: Database;
  databaseUrl?: string;
  /** Longest wait for one answer, in milliseconds. */
  answerTimeoutMs: number;
  log?: (line: string) => void;
}

export interface MemoryEvalReport {
  model: string;
  baseUrl: string;
  contextWindow: number;
  recall: number;
  questions: Array<{ question: string; answer: string; expected: string[]; correct: boolean }>;
  resets: { decided: number; forced: number };
  refusedOrFailed: number;
  costByRole: Record<string, { calls: number; promptTokens: number; cachedTokens: number; completionTokens: number; usd: number | null }>;
  cacheRatio: number;
  wallSeconds: number;
}

/** A long pasted log (about 4,500 tokens): work that fills the context. */
export function taskLog(task: number): string {
  const lines: string[] = [];
  for (let line = 0; lines.join('\n').length < 18_000; line += 1) {
    const level = (line * 7 + task) % 11 === 0 ? 'ERROR' : 'INFO';
    lines.push(`2026-12-0${(task % 9) + 1}T10:${String(line % 60).padStart(2, '0')}:00Z ${level} worker-${task} step ${line}: processed batch ${task * 1000 + line}`);
  }
  return lines.join('\n');
}

/** Runs the scripted conversation and measures it. */
export async function runMemoryEval(options: MemoryEvalOptions): Promise<MemoryEvalReport> {
  const say = options.log ?? (() => undefined);
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-eval-'));
  const log = createLogger('silent');
  const database = options.database ?? await openDatabase({ databaseUrl: options.databaseUrl, dataDir, log });
  const parsed = parseConfig({
    MODEL: options.model, OPENAI_BASE_URL: options.baseUrl, OPENAI_API_KEY: options.apiKey ?? 'none',
    MODEL_CONTEXT_WINDOW: String(options.contextWindow), TOOLS: 'memory', DATA_DIR: dataDir,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  const built = await buildAgent({ config: parsed.config, database, log, environment: {} });
  const events: AgentEvent[] = [];
  const unsubscribe = built.events.subscribe((event) => void events.push(event));
  const started = performance.now();
  const thread = { platform: 'console' as const, workspaceId: 'local', channelId: `eval-${Date.now()}`, threadKey: `eval-${Date.now()}` };
  let counter = 0;
  let sessionId: string | null = null;
  /** Sends one message and waits for its answer (and for memory to settle). */
  const ask = async (text: string): Promise<string> => {
    const before = events.filter((event) => event.type === 'answer').length;
    counter += 1;
    const { session } = await built.agent.submit(
      { address: thread, platformMessageKey: `eval:${counter}`, authorId: 'eval', authorName: 'Eval', text },
      { startSession: sessionId === null, title: 'memory eval' },
    );
    sessionId ??= session?.id ?? null;
    if (!sessionId) throw new Error('the agent opened no session');
    const deadline = Date.now() + options.answerTimeoutMs;
    for (;;) {
      const answers = events.filter((event): event is Extract<AgentEvent, { type: 'answer' }> => event.type === 'answer');
      const runner = await built.agent.runner(sessionId);
      if (answers.length > before && runner.quiet) return answers.at(-1)?.text ?? '';
      if (runner.state === 'failed') return answers.length > before ? (answers.at(-1)?.text ?? '') : '';
      if (Date.now() > deadline) throw new Error(`no answer within ${options.answerTimeoutMs} ms to: ${text.slice(0, 80)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  try {
    say('stating the facts');
    await ask(`Please remember these facts about our project; I will ask about them later.\n${evalFacts.map((fact) => `- ${fact.statement}`).join('\n')}`);
    for (let task = 1; task <= options.tasks; task += 1) {
      say(`task ${task} of ${options.tasks}`);
      await ask(`Task ${task}: here is the log of worker ${task}. How many ERROR lines does it have? Answer in one line.\n${taskLog(task)}`);
    }
    const questions: MemoryEvalReport['questions'] = [];
    for (const fact of evalFacts) {
      say(`asking: ${fact.question}`);
      const answer = await ask(`${fact.question} Answer in one line.`);
      const correct = fact.expect.every((word) => answer.toLowerCase().includes(word));
      questions.push({ question: fact.question, answer, expected: fact.expect, correct });
    }
    const resets = events.filter((event): event is Extract<AgentEvent, { type: 'context-reset' }> => event.type === 'context-reset');
    const report: MemoryEvalReport = {
      model: options.model,
      baseUrl: options.baseUrl,
      contextWindow: options.contextWindow,
      recall: questions.filter((question) => question.correct).length / questions.length,
      questions,
      resets: { forced: resets.filter((event) => event.reason === 'context-full').length, decided: resets.filter((event) => event.reason !== 'context-full').length },
      refusedOrFailed: 0,
      costByRole: {},
      cacheRatio: 0,
      wallSeconds: Math.round((performance.now() - started) / 100) / 10,
    };
    const calls = sessionId ? await database.prisma.modelCall.findMany({ where: { sessionId } }) : [];
    const prices = pricesFor(options.model);
    for (const call of calls) {
      if (call.error) report.refusedOrFailed += 1;
      const role = (report.costByRole[call.role] ??= { calls: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0, usd: prices ? 0 : null });
      role.calls += 1;
      role.promptTokens += call.promptTokens;
      role.cachedTokens += call.cachedTokens;
      role.completionTokens += call.completionTokens;
      if (prices && role.usd !== null) role.usd += costOf(prices, { promptTokens: call.promptTokens, cachedTokens: call.cachedTokens, completionTokens: call.completionTokens, ...(call.cacheWriteTokens === null ? {} : { cacheWriteTokens: call.cacheWriteTokens }) });
    }
    const prompt = calls.reduce((total, call) => total + call.promptTokens, 0);
    report.cacheRatio = prompt === 0 ? 0 : calls.reduce((total, call) => total + call.cachedTokens, 0) / prompt;
    return report;
  } finally {
    unsubscribe();
    await built.agent.stop(5_000);
    await built.close();
    if (!options.database) await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' }, model: { type: 'string' }, 'api-key': { type: 'string' },
      window: { type: 'string', default: '16000' }, tasks: { type: 'string', default: '6' },
      'database-url': { type: 'string' }, out: { type: 'string', default: 'eval-memory-report.json' },
    },
  });
  if (!values['base-url'] || !values.model) {
    console.error('usage: npm run eval:memory -- --base-url <OpenAI-compatible URL ending in /v1> --model <name> [--api-key …] [--window 16000] [--tasks 6] [--database-url …] [--out file.json]');
    process.exit(2);
  }
  const report = await runMemoryEval({
    baseUrl: values['base-url'], model: values.model, contextWindow: Number(values.window), tasks: Number(values.tasks), answerTimeoutMs: 15 * 60_000,
    ...(values['api-key'] ? { apiKey: values['api-key'] } : {}),
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    log: (line) => console.error(`eval: ${line}`),
  });
  await writeFile(values.out ?? 'eval-memory-report.json', `${JSON.stringify(report, null, 2)}\n`);
  console.log(`recall=${report.recall.toFixed(2)} resets_decided=${report.resets.decided} resets_forced=${report.resets.forced} cache_ratio=${report.cacheRatio.toFixed(3)} report=${values.out}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
