// The model clients' HTTP cost per streamed call: the OpenAI SDK through Node's own fetch against
// the same SDK through src/adapters/http/api-fetch.ts (undici's request), instant answers from a
// loopback SSE server in a child process (its CPU is not counted). Not one of B1–B4: the figure
// behind B3's "where the CPU per turn goes" in RESULTS.md.
// Run alone: npx tsx bench/model-fetch.ts   (BENCH_MODEL_FETCH_CALLS, default 3,000 per round)
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { createApiFetch } from '../src/adapters/http/api-fetch.js';
import { envNumber, fixed } from './support/stats.js';

const calls = envNumber('BENCH_MODEL_FETCH_CALLS', 3_000);
const server = fork(fileURLToPath(new URL('./support/sse-answer-server.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'] });
const port = await new Promise<number>((resolve) => server.once('message', (message) => resolve(message as number)));

// A request the size of a B3 worker call: the system prompt and a few turns.
const messages: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'x'.repeat(6_000) },
  ...Array.from({ length: 10 }, (_, index): ChatCompletionMessageParam => ({ role: index % 2 ? 'assistant' : 'user', content: 'hello '.repeat(50) })),
];

async function cpuPerCall(fetch: typeof globalThis.fetch | undefined): Promise<{ cpuMs: number; wallMs: number }> {
  const client = new OpenAI({ apiKey: 'k', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0, logLevel: 'off', ...(fetch ? { fetch } : {}) });
  const once = async () => {
    const { data } = await client.chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true } }).withResponse();
    for await (const chunk of data) void chunk;
  };
  for (let index = 0; index < 300; index += 1) await once(); // warm-up
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let index = 0; index < calls; index += 1) await once();
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000 / calls, wallMs: (performance.now() - started) / calls };
}

for (let round = 1; round <= 2; round += 1) {
  for (const [name, fetch] of [["Node's fetch", undefined], ['api-fetch (undici request)', createApiFetch()]] as const) {
    const { cpuMs, wallMs } = await cpuPerCall(fetch);
    console.log(`round ${round}  ${name.padEnd(30)} CPU ${fixed(cpuMs, 3)} ms per call, wall ${fixed(wallMs, 3)} ms`);
  }
}
server.kill();
process.exit(0);
