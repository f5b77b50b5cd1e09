// /metrics in Prometheus format, fed by a real run of the service; kept off the public port
// (METRICS_PORT) or behind a token (METRICS_TOKEN); read from memory, never from the database.
import { mkdtemp } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { OutboxStore } from '../../src/adapters/storage/outbox-store.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { EventBus } from '../../src/core/events.js';
import { Metrics } from '../../src/metrics.js';
import { newThread } from '../support/agent-harness.js';
import { takeDatabaseAway } from '../support/database-faults.js';
import { startScript, type RunningProcess } from '../support/processes.js';
import { useTestBed } from '../support/test-bed.js';
import { arrive, startSession } from '../support/sessions.js';

const bed = useTestBed();

describe('/metrics', () => {
  it('reports runs, model calls and tokens by role, cache ratio, steers taken, leases and event-loop lag', async () => {
    const { database, model } = bed;
    const stores = createPrismaStores(database.prisma);
    const thread = newThread();
    await arrive(stores, thread, { key: `console:${thread.threadKey}:1`, authorId: 'u', text: 'hi' });
    model.enqueue({ content: 'hello', usage: { promptTokens: 2000, cachedTokens: 1536, completionTokens: 3 } });
    const service = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-metrics-')), PORT: '0',
      OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url, MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '1000000',
      MODEL_PRICES: '{"input":1.25,"cached_input":0.125,"output":10}',
    });
    try {
      const started = await service.waitForLog(/^service-started/, 90_000);
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
      // No since-start ratio and no second event-loop gauge: PromQL and prom-client's defaults have them.
      expect(text).not.toMatch(/hippo_cache_hit_ratio|hippo_event_loop_lag/);
      expect(text).toMatch(/hippo_steers_taken_total 1/);
      expect(text).toMatch(/hippo_leases_held \d/);
      expect(text).toMatch(/nodejs_eventloop_lag_p99_seconds [\d.e-]+/);
      expect(text).toMatch(/hippo_heap_used_ratio 0\.\d+/);
      // 464 uncached × $1.25 + 1,536 cached × $0.125 + 3 output × $10, per million tokens.
      expect(text).toMatch(/hippo_model_cost_usd_total\{role="worker"\} 0\.00080\d*/);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 150_000);

  it('refuses a scrape without METRICS_TOKEN as a bearer token, and never logs the token', async () => {
    const token = 'metrics-token-0123456789';
    const service = startService({ METRICS_TOKEN: token });
    try {
      const started = await service.waitForLog(/^service-started/, 90_000);
      const url = `http://127.0.0.1:${String(started['port'])}/metrics`;
      const anonymous = await fetch(url);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await anonymous.text()).not.toContain('hippo_');
      expect((await fetch(url, { headers: { authorization: 'Bearer metrics-token-0123456788' } })).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: token } })).status).toBe(401);
      const scraped = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^# HELP hippo_model_calls_total/m);
      expect((await fetch(`http://127.0.0.1:${String(started['port'])}/healthz`)).status).toBe(200);
      expect(service.lines.join('\n')).not.toContain(token);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 150_000);

  it('serves /metrics on METRICS_PORT only, not on the public PORT, bound to loopback unless METRICS_HOST says otherwise', async () => {
    const service = startService({ METRICS_PORT: '0' });
    try {
      const started = await service.waitForLog(/^service-started/, 90_000);
      const listening = await service.waitForLog(/^metrics-listening$/, 10_000);
      expect(listening['port']).not.toBe(started['port']);
      expect(listening['host']).toBe('127.0.0.1');
      // From another address of this machine: PORT answers, METRICS_PORT is not there.
      if (outsideAddress) {
        expect((await fetch(`http://${outsideAddress}:${String(started['port'])}/healthz`)).status).toBe(200);
        await expect(fetch(`http://${outsideAddress}:${String(listening['port'])}/metrics`)).rejects.toThrow();
      }
      expect(service.lines.join('\n')).not.toContain('config-warning: /metrics');
      const publicPort = `http://127.0.0.1:${String(started['port'])}`;
      const metricsPort = `http://127.0.0.1:${String(listening['port'])}`;
      expect((await fetch(`${publicPort}/metrics`)).status).toBe(404);
      expect((await fetch(`${publicPort}/healthz`)).status).toBe(200);
      const scraped = await fetch(`${metricsPort}/metrics`);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^hippo_leases_held 0$/m);
      // Nothing else lives there: the probes stay on PORT.
      expect((await fetch(`${metricsPort}/readyz`)).status).toBe(404);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 150_000);

  it('warns at start-up when /metrics is public: on PORT, or on METRICS_HOST off loopback, without METRICS_TOKEN', async () => {
    const onPort = startService({});
    const offLoopback = startService({ METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' });
    try {
      const warning = await onPort.waitForLog(/^config-warning: \/metrics/, 90_000);
      expect(warning['level']).toBe(40);
      expect(warning['msg']).toMatch(/^config-warning: \/metrics is served on PORT \(0, every address\) without METRICS_TOKEN: .*; set METRICS_PORT \(bound to METRICS_HOST, 127\.0\.0\.1 unless set\) or METRICS_TOKEN$/);
      const wide = await offLoopback.waitForLog(/^config-warning: \/metrics/, 90_000);
      expect(wide['msg']).toMatch(/^config-warning: \/metrics is served on METRICS_PORT \(0\) at METRICS_HOST=0\.0\.0\.0 without METRICS_TOKEN/);
      const listening = await offLoopback.waitForLog(/^metrics-listening$/, 90_000);
      expect(listening['host']).toBe('0.0.0.0');
      if (outsideAddress) expect((await fetch(`http://${outsideAddress}:${String(listening['port'])}/metrics`)).status).toBe(200);
    } finally {
      onPort.kill('SIGTERM');
      offLoopback.kill('SIGTERM');
      await Promise.all([onPort.exited, offLoopback.exited]);
    }
  }, 150_000);

  it('answers a scrape while the database is away: it reads no table', async () => {
    const service = startService({});
    const away: Array<{ restore(): Promise<void> }> = [];
    try {
      const started = await service.waitForLog(/^service-started/, 90_000);
      away.push(await takeDatabaseAway(bed.database.name));
      const scraped = await fetch(`http://127.0.0.1:${String(started['port'])}/metrics`, { signal: AbortSignal.timeout(20_000) });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^hippo_leases_held 0$/m);
    } finally {
      for (const database of away) await database.restore();
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 150_000);

  it('counts leases and outbox writes as they happen (acquired, released; queued, sent, retried, failed)', async () => {
    const { database } = bed;
    const metrics = new Metrics({ events: new EventBus(() => undefined) });
    const stores = createPrismaStores(database.prisma);
    const session = await startSession(stores, newThread());
    const leases = metrics.instrumentLeases(createLeaseStore(database.prisma));
    const lease = await leases.acquire(session.id, 'replica-a', 10_000);
    expect(await metric(metrics, 'hippo_leases_held')).toBe(1);
    expect(await leases.acquire(session.id, 'replica-b', 10_000)).toBeNull(); // held by a: b holds nothing
    expect(await metric(metrics, 'hippo_leases_held')).toBe(1);
    await leases.release(session.id, 'replica-a', lease?.fencingToken ?? 0);
    expect(await metric(metrics, 'hippo_leases_held')).toBe(0);

    const outbox = metrics.instrumentOutbox(new OutboxStore(database.prisma, database.pool));
    const write = (key: string) => ({
      idempotencyKey: key, sessionId: null, platform: 'test', operation: 'post', payload: {}, targetKey: null,
      fencingToken: null, supersededOperations: [], supersedesTarget: false, whileSteerQueued: null,
    });
    await outbox.insert(write('metrics:1'));
    await outbox.insert(write('metrics:1')); // a repeat stores nothing
    await outbox.insert(write('metrics:2'));
    await outbox.insert(write('metrics:3'));
    const [first, second, third] = await outbox.claimDue('test', { leaseMs: 60_000, batchSize: 10 });
    await outbox.markSent([{ id: first?.id ?? 0n, platformMessageId: 'm1' }]);
    await outbox.retryLater(second?.id ?? 0n, 1_000, 'rate limited');
    await outbox.markFailed(third?.id ?? 0n, 'gone');
    expect(await metric(metrics, 'hippo_outbox_writes_total', 'queued')).toBe(3);
    expect(await metric(metrics, 'hippo_outbox_writes_total', 'sent')).toBe(1);
    expect(await metric(metrics, 'hippo_outbox_writes_total', 'retried')).toBe(1);
    expect(await metric(metrics, 'hippo_outbox_writes_total', 'failed')).toBe(1);
  });

  it('logs an unexpected rejection and keeps serving (R18: the process survives)', async () => {
    const { database, model } = bed;
    const preload = new URL('../support/reject-once.mjs', import.meta.url).href;
    const service = startScript('src/main.ts', {
      DATABASE_URL: database.url, DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-reject-')), PORT: '0',
      OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url, MODEL: 'test-model',
      NODE_OPTIONS: `--import ${preload}`, HIPPO_TEST_REJECT_AFTER_MS: '10000',
    });
    try {
      const started = await service.waitForLog(/^service-started/, 90_000);
      const logged = await service.waitForLog(/^unhandled-rejection/, 20_000);
      expect(JSON.stringify(logged)).toContain('an unexpected rejection (test)');
      const health = await fetch(`http://127.0.0.1:${String(started['port'])}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      service.kill('SIGTERM');
      await service.exited;
    }
  }, 150_000);
});

/** The service against the bed's database and model, with `env` added. */
/** An address of this machine that is not loopback (to tell a loopback bind from a wide one), if it has one. */
const outsideAddress = Object.values(networkInterfaces()).flat().find((entry) => entry && !entry.internal && entry.family === 'IPv4')?.address;

function startService(env: Record<string, string>): RunningProcess {
  const { database, model } = bed;
  return startScript('src/main.ts', {
    DATABASE_URL: database.url, PORT: '0', OPENAI_API_KEY: 'k', OPENAI_BASE_URL: model.url, MODEL: 'test-model', ...env,
  });
}

/** One value of a metric (the series with `outcome` when given). */
async function metric(metrics: Metrics, name: string, outcome?: string): Promise<number> {
  const found = (await metrics.registry.getSingleMetric(name)?.get())?.values.find((value) => outcome === undefined || value.labels['outcome'] === outcome);
  return found?.value ?? Number.NaN;
}
