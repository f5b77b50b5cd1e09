// /metrics in Prometheus format, fed by a real run of the service.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { newThread } from '../support/agent-harness.js';
import { startScript } from '../support/processes.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

describe('/metrics', () => {
  it('reports runs, model calls and tokens by role, cache ratio, queue depth, leases, outbox and event-loop lag', async () => {
    const { database, model } = bed;
    const stores = createPrismaStores(database.prisma);
    const thread = newThread();
    const { session } = await stores.sessions.open(thread, { title: 't', scope: 'channel' });
    await stores.steers.enqueue({ sessionId: session.id, platformMessageKey: `console:${thread.threadKey}:1`, authorId: 'u', authorName: 'Ada', text: 'hi' });
    model.enqueue({ content: 'hello', usage: { promptTokens: 2000, cachedTokens: 1536, completionTokens: 3 } });
    const service = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-metrics-')), PORT: '0',
      OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url, MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000',
      MODEL_PRICES: '{"input":1.25,"cached_input":0.125,"output":10}',
    });
    try {
      const started = await service.waitForLog(/^service-started/, 30_000);
      await model.waitForRequests(1, { timeoutMs: 20_000 });
      const url = `http://127.0.0.1:${String(started['port'])}/metrics`;
      let text = '';
      const deadline = Date.now() + 10_000;
      while (!/hippo_runs_total\{reason="idle"\} 1/.test(text)) {
        if (Date.now() > deadline) throw new Error(`metrics never showed the run:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        text = await (await fetch(url)).text();
      }
      expect(text).toMatch(/hippo_model_calls_total\{role="worker",outcome="ok"\} 1/);
      expect(text).toMatch(/hippo_model_tokens_total\{role="worker",kind="prompt"\} 2000/);
      expect(text).toMatch(/hippo_model_tokens_total\{role="worker",kind="cached"\} 1536/);
      expect(text).toMatch(/hippo_cache_hit_ratio\{role="worker"\} 0\.768/);
      expect(text).toMatch(/hippo_steer_queue_depth 0/);
      expect(text).toMatch(/hippo_leases_held \d/);
      expect(text).toMatch(/hippo_outbox_backlog 0/);
      expect(text).toMatch(/hippo_event_loop_lag_p99_seconds [\d.e-]+/);
      expect(text).toMatch(/hippo_heap_used_ratio 0\.\d+/);
      // 464 uncached × $1.25 + 1,536 cached × $0.125 + 3 output × $10, per million tokens.
      expect(text).toMatch(/hippo_model_cost_usd_total\{role="worker"\} 0\.00080\d*/);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 60_000);

  it('logs an unexpected rejection and keeps serving (R18: the process survives)', async () => {
    const { database, model } = bed;
    const preload = new URL('../support/reject-once.mjs', import.meta.url).href;
    const service = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-reject-')), PORT: '0',
      OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url, MODEL: 'test-model',
      NODE_OPTIONS: `--import ${preload}`, HIPPO_TEST_REJECT_AFTER_MS: '10000',
    });
    try {
      const started = await service.waitForLog(/^service-started/, 30_000);
      const logged = await service.waitForLog(/^unhandled-rejection/, 20_000);
      expect(JSON.stringify(logged)).toContain('an unexpected rejection (test)');
      const health = await fetch(`http://127.0.0.1:${String(started['port'])}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 60_000);
});
