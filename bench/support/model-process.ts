// The fake model server in a process of its own, so its CPU work (JSON, prompt-cache simulation)
// never runs on the event loop being measured. Driven over IPC by model-host.ts.
import { startFakeAnthropicServer } from '../../test/fakes/fake-anthropic-server.js';
import { startFakeModelServer } from '../../test/fakes/fake-model-server.js';
import type { HostMessage, ProcessMessage } from './model-host.js';
import { newCounters, scenarioHandler, type Scenario } from './scenarios.js';

const send = (message: ProcessMessage) => process.send?.(message);

const simulateCache = process.env['BENCH_MODEL_SIMULATE_CACHE'] === '1';
// Large chunks: the benchmarks measure the agent, not the fake's per-chunk flushes. The Anthropic
// fake always simulates its cache, with Claude Sonnet's 1,024-token minimum.
const server = process.env['BENCH_MODEL_PROVIDER'] === 'anthropic'
  ? await startFakeAnthropicServer({ minCacheTokens: 1_024, chunkSize: 4096 })
  : await startFakeModelServer({ simulateCache, chunkSize: 4096, keepBodies: false });
let counters = newCounters();

function configure(scenario: Scenario): void {
  server.reset(); // forgets recorded requests and the simulated cache (memory between runs)
  counters = newCounters();
  server.respond(scenarioHandler(scenario, counters));
  // The Anthropic fake takes its window at start only; B1's long-task run uses the OpenAI one.
  if ('setContextWindow' in server) server.setContextWindow(scenario.kind === 'memory' ? scenario.refuseAboveTokens : undefined);
}

process.on('message', (raw) => {
  const message = raw as HostMessage;
  switch (message.type) {
    case 'configure':
      configure(message.scenario);
      send({ type: 'done', id: message.id });
      break;
    case 'stats': {
      const cpu = process.cpuUsage();
      send({ type: 'stats', id: message.id, counters, requests: server.requests.length, refused: 'refused' in server ? server.refused.length : 0, cpuMs: (cpu.user + cpu.system) / 1000 });
      break;
    }
    case 'close':
      void server.close().finally(() => process.exit(0));
      break;
  }
});
process.on('disconnect', () => void server.close().finally(() => process.exit(0)));

send({ type: 'ready', url: server.url });
