// Prometheus metrics (/metrics): runs, answers, model calls and tokens by role, steers received and
// taken, the intake's latency (the ack), leases held, outbox writes, memory runs and resets by
// reason, answer feedback, heap; prom-client's default
// process metrics beside them (event-loop lag among them: `nodejs_eventloop_lag_p99_seconds`).
// Counters only where a ratio or rate is wanted: PromQL computes it over any window, e.g. the cache
// hit ratio `sum by (role) (rate(hippo_model_tokens_total{kind="cached"}[1h])) / sum by (role)
// (rate(hippo_model_tokens_total{kind="prompt"}[1h]))`. Every value is kept in memory as things
// happen: a scrape reads no database (it answers while the database is away, and costs nothing
// however often Prometheus asks).
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { OutboxStore } from './adapters/storage/outbox-store.js';
import type { EventBus } from './core/events.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from './core/model-client.js';
import { costOf, type ModelPrices } from './core/prices.js';
import type { LeaseStore, SteerStore } from './core/store.js';

export class Metrics {
  readonly registry = new Registry();
  private readonly modelCalls = new Counter({ name: 'hippo_model_calls_total', help: 'Model calls by role and outcome', labelNames: ['role', 'outcome'], registers: [this.registry] });
  private readonly tokens = new Counter({ name: 'hippo_model_tokens_total', help: 'Tokens by role and kind (prompt, cached, completion; cache_write where the provider bills cache writes)', labelNames: ['role', 'kind'], registers: [this.registry] });
  private readonly latency = new Histogram({ name: 'hippo_model_call_seconds', help: 'Model call latency by role', labelNames: ['role'], buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120], registers: [this.registry] });
  private readonly feedback = new Counter({ name: 'hippo_answer_feedback_total', help: '👍 (up) and 👎 (down) reactions on answers, by platform', labelNames: ['platform', 'kind'], registers: [this.registry] });

  private readonly cost = new Counter({ name: 'hippo_model_cost_usd_total', help: 'What model calls cost, by role, in US dollars (at MODEL_PRICES or the built-in table)', labelNames: ['role'], registers: [this.registry] });
  private readonly pricesOf: (model: string) => ModelPrices | null;

  private readonly outboxWrites = new Counter({ name: 'hippo_outbox_writes_total', help: 'Platform writes by outcome: queued (stored), sent, retried (a failed attempt to try again), failed (given up)', labelNames: ['outcome'], registers: [this.registry] });
  private readonly intake = new Histogram({
    name: 'hippo_ack_seconds', help: 'Time to store an arriving message durably, which the platform\'s ack waits for, by outcome (ok, error: the database refused or was away)',
    labelNames: ['outcome'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: [this.registry],
  });
  /** Sessions whose lease this replica holds (acquired, not yet released or lost). */
  private readonly heldLeases = new Set<string>();

  constructor(options: { events: EventBus; prices?: (model: string) => ModelPrices | null }) {
    this.pricesOf = options.prices ?? (() => null);
    const { registry } = this;
    collectDefaultMetrics({ register: registry });
    const runs = new Counter({ name: 'hippo_runs_total', help: 'Worker runs by how they ended', labelNames: ['reason'], registers: [registry] });
    const memoryRuns = new Counter({ name: 'hippo_memory_runs_total', help: 'Summarizer and decider runs by outcome', labelNames: ['role', 'status'], registers: [registry] });
    const resets = new Counter({ name: 'hippo_context_resets_total', help: 'Context resets by reason: context-full (R19) or requested (a decider or a person)', labelNames: ['reason'], registers: [registry] });
    const answers = new Counter({ name: 'hippo_answers_total', help: 'Final answers posted to threads, by platform', labelNames: ['platform'], registers: [registry] });
    // Received on one replica, taken on any: the queue depth is sum(received) - sum(taken).
    const steers = new Counter({ name: 'hippo_steer_messages_total', help: 'Steer messages received', registers: [registry] });
    const taken = new Counter({ name: 'hippo_steers_taken_total', help: 'Steer messages a worker took into its context', registers: [registry] });
    // R23: decided on any replica, counted once where the decision was taken (first).
    const approvals = new Counter({ name: 'hippo_tool_approvals_total', help: 'Tool calls that waited for a person, by outcome (approved, approved_for_run, denied, expired, cancelled)', labelNames: ['outcome'], registers: [registry] });
    options.events.subscribe((event) => {
      if (event.type === 'run-end') runs.inc({ reason: event.reason });
      else if (event.type === 'approval-decided' && event.first) approvals.inc({ outcome: event.approval.status === 'approved' && event.approval.scope === 'run' ? 'approved_for_run' : event.approval.status });
      else if (event.type === 'memory-run-end') memoryRuns.inc({ role: event.role, status: event.status });
      else if (event.type === 'context-reset') resets.inc({ reason: event.reason ?? 'requested' });
      else if (event.type === 'answer') answers.inc({ platform: event.session.platform });
      else if (event.type === 'steer-received') steers.inc();
      else if (event.type === 'steer-taken') taken.inc(event.steers.length);
    });
    const heldLeases = this.heldLeases;
    new Gauge({
      name: 'hippo_leases_held', help: 'Session leases this replica holds', registers: [registry],
      collect() {
        this.set(heldLeases.size);
      },
    });
    new Gauge({
      name: 'hippo_heap_used_ratio', help: 'V8 heap in use over the heap limit (the process aborts near 1; alert well before)', registers: [registry],
      collect() {
        const heap = getHeapStatistics();
        this.set(heap.heap_size_limit === 0 ? 0 : heap.used_heap_size / heap.heap_size_limit);
      },
    });
  }

  /** Counts a new 👍 / 👎 on an answer. */
  readonly answerFeedback = (platform: string, kind: 'up' | 'down'): void => {
    this.feedback.inc({ platform, kind });
  };

  /** Wraps the lease store so the leases this replica holds are known without asking the database. */
  instrumentLeases(store: LeaseStore): LeaseStore {
    const held = this.heldLeases;
    return {
      ...store,
      acquire: async (sessionId, owner, ttlMs) => {
        const lease = await store.acquire(sessionId, owner, ttlMs);
        if (lease) held.add(sessionId);
        return lease;
      },
      renewAll: async (owner, leases, ttlMs) => {
        const renewed = await store.renewAll(owner, leases, ttlMs);
        for (const { sessionId } of leases) if (!renewed.has(sessionId)) held.delete(sessionId);
        return renewed;
      },
      release: async (sessionId, owner, fencingToken) => {
        await store.release(sessionId, owner, fencingToken);
        held.delete(sessionId);
      },
    };
  }

  /** Wraps the steer store so the intake of each arriving message (what the ack waits for) is timed. */
  instrumentIntake(store: SteerStore): SteerStore {
    const intake = this.intake;
    const timed = Object.create(store) as SteerStore;
    timed.accept = async (message) => {
      const end = intake.startTimer();
      try {
        const accepted = await store.accept(message);
        end({ outcome: 'ok' });
        return accepted;
      } catch (error) {
        end({ outcome: 'error' });
        throw error;
      }
    };
    return timed;
  }

  /** Wraps the outbox store so its writes are counted as they are stored, sent, retried and given up. */
  instrumentOutbox(store: OutboxStore): OutboxStore {
    const writes = this.outboxWrites;
    // Delegates to the store (its own methods keep their `this`); only the counted ones are replaced.
    const counted = Object.create(store) as OutboxStore;
    counted.insert = async (entry) => {
      const result = await store.insert(entry);
      if (result.inserted) writes.inc({ outcome: 'queued' });
      return result;
    };
    counted.insertAll = async (entries) => {
      const stored = await store.insertAll(entries);
      writes.inc({ outcome: 'queued' }, stored.length);
      return stored;
    };
    counted.markSent = async (sent) => {
      await store.markSent(sent);
      writes.inc({ outcome: 'sent' }, sent.length);
    };
    counted.retryLater = async (id, delayMs, reason) => {
      await store.retryLater(id, delayMs, reason);
      writes.inc({ outcome: 'retried' });
    };
    counted.markFailed = async (id, reason) => {
      await store.markFailed(id, reason);
      writes.inc({ outcome: 'failed' });
    };
    return counted;
  }

  /** Wraps a model client so every call is counted by role. */
  instrument(client: ModelClient): ModelClient {
    return {
      complete: async (request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> => {
        const role = options.role;
        const end = this.latency.startTimer({ role });
        try {
          const response = await client.complete(request, options);
          this.modelCalls.inc({ role, outcome: 'ok' });
          const usage = response.usage;
          if (usage) {
            this.tokens.inc({ role, kind: 'prompt' }, usage.promptTokens);
            this.tokens.inc({ role, kind: 'cached' }, usage.cachedTokens);
            this.tokens.inc({ role, kind: 'completion' }, usage.completionTokens);
            if (usage.cacheWriteTokens !== undefined) this.tokens.inc({ role, kind: 'cache_write' }, usage.cacheWriteTokens);
            const prices = this.pricesOf(request.model);
            if (prices) this.cost.inc({ role }, costOf(prices, usage));
          }
          return response;
        } catch (error) {
          this.modelCalls.inc({ role, outcome: 'error' });
          throw error;
        } finally {
          end();
        }
      },
    };
  }

}

/**
 * The /metrics route: the registry's text, or 401 without `Authorization: Bearer <token>` when a
 * token is set (METRICS_TOKEN). The token is compared in constant time.
 */
export function metricsHandler(registry: Registry, token: string | undefined): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  const expected = token === undefined ? null : Buffer.from(`Bearer ${token}`);
  return async (request, response) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    if (expected && (given.length !== expected.length || !timingSafeEqual(given, expected))) {
      response.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="metrics"' });
      response.end('METRICS_TOKEN is set: send Authorization: Bearer <token>\n');
      return;
    }
    const body = await registry.metrics();
    response.writeHead(200, { 'content-type': registry.contentType });
    response.end(body);
  };
}
