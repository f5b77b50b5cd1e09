// Prometheus metrics (/metrics): runs, model calls and tokens by role, cache hit ratio, steer
// queue depth, leases held, outbox backlog, memory runs and resets, answer feedback, event-loop lag.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PrismaClient } from '../prisma/generated/client.js';
import type { EventBus } from './core/events.js';
import type { AgentRole } from './core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse } from './core/model-client.js';
import { costOf, type ModelPrices } from './core/prices.js';

export class Metrics {
  readonly registry = new Registry();
  private readonly modelCalls = new Counter({ name: 'hippo_model_calls_total', help: 'Model calls by role and outcome', labelNames: ['role', 'outcome'], registers: [this.registry] });
  private readonly tokens = new Counter({ name: 'hippo_model_tokens_total', help: 'Tokens by role and kind (prompt, cached, completion; cache_write where the provider bills cache writes)', labelNames: ['role', 'kind'], registers: [this.registry] });
  private readonly latency = new Histogram({ name: 'hippo_model_call_seconds', help: 'Model call latency by role', labelNames: ['role'], buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120], registers: [this.registry] });
  private readonly feedback = new Counter({ name: 'hippo_answer_feedback_total', help: '👍 (up) and 👎 (down) reactions on answers, by platform', labelNames: ['platform', 'kind'], registers: [this.registry] });
  private readonly promptByRole = new Map<AgentRole, { prompt: number; cached: number }>();
  private readonly eventLoop = monitorEventLoopDelay({ resolution: 20 });

  private readonly cost = new Counter({ name: 'hippo_model_cost_usd_total', help: 'What model calls cost, by role, in US dollars (at MODEL_PRICES or the built-in table)', labelNames: ['role'], registers: [this.registry] });
  private readonly pricesOf: (model: string) => ModelPrices | null;

  constructor(options: { events: EventBus; prisma: PrismaClient; owner: string; prices?: (model: string) => ModelPrices | null }) {
    this.pricesOf = options.prices ?? (() => null);
    const { registry } = this;
    collectDefaultMetrics({ register: registry });
    this.eventLoop.enable();
    const runs = new Counter({ name: 'hippo_runs_total', help: 'Worker runs by how they ended', labelNames: ['reason'], registers: [registry] });
    const memoryRuns = new Counter({ name: 'hippo_memory_runs_total', help: 'Summarizer and decider runs by outcome', labelNames: ['role', 'status'], registers: [registry] });
    const resets = new Counter({ name: 'hippo_context_resets_total', help: 'Context resets', registers: [registry] });
    const steers = new Counter({ name: 'hippo_steer_messages_total', help: 'Steer messages received', registers: [registry] });
    options.events.subscribe((event) => {
      if (event.type === 'run-end') runs.inc({ reason: event.reason });
      else if (event.type === 'memory-run-end') memoryRuns.inc({ role: event.role, status: event.status });
      else if (event.type === 'context-reset') resets.inc();
      else if (event.type === 'steer-received') steers.inc();
    });
    const promptByRole = this.promptByRole;
    new Gauge({
      name: 'hippo_cache_hit_ratio', help: 'Cached prompt tokens over prompt tokens, by role, since start', labelNames: ['role'], registers: [registry],
      collect() {
        for (const [role, totals] of promptByRole) this.set({ role }, totals.prompt === 0 ? 0 : totals.cached / totals.prompt);
      },
    });
    const prisma = options.prisma;
    const count = async (query: Promise<Array<{ n: bigint }>>) => Number((await query)[0]?.n ?? 0n);
    new Gauge({
      name: 'hippo_steer_queue_depth', help: 'Steer messages waiting to be taken', registers: [registry],
      async collect() {
        this.set(await count(prisma.$queryRaw`SELECT count(*) AS n FROM steer_messages WHERE status = 'queued'`));
      },
    });
    new Gauge({
      name: 'hippo_leases_held', help: 'Session leases this replica holds', registers: [registry],
      async collect() {
        this.set(await count(prisma.$queryRaw`SELECT count(*) AS n FROM session_leases WHERE owner = ${options.owner} AND NOT released AND expires_at > now()`));
      },
    });
    new Gauge({
      name: 'hippo_outbox_backlog', help: 'Platform writes not sent yet', registers: [registry],
      async collect() {
        this.set(await count(prisma.$queryRaw`SELECT count(*) AS n FROM outbox WHERE status IN ('pending', 'sending')`));
      },
    });
    new Gauge({
      name: 'hippo_heap_used_ratio', help: 'V8 heap in use over the heap limit (the process aborts near 1; alert well before)', registers: [registry],
      collect() {
        const heap = getHeapStatistics();
        this.set(heap.heap_size_limit === 0 ? 0 : heap.used_heap_size / heap.heap_size_limit);
      },
    });
    const loop = this.eventLoop;
    new Gauge({
      name: 'hippo_event_loop_lag_p99_seconds', help: 'Event-loop delay, 99th percentile since the last scrape', registers: [registry],
      collect() {
        this.set(loop.percentile(99) / 1e9);
        loop.reset();
      },
    });
  }

  /** Counts a new 👍 / 👎 on an answer. */
  readonly answerFeedback = (platform: string, kind: 'up' | 'down'): void => {
    this.feedback.inc({ platform, kind });
  };

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
            const totals = this.promptByRole.get(role) ?? { prompt: 0, cached: 0 };
            totals.prompt += usage.promptTokens;
            totals.cached += usage.cachedTokens;
            this.promptByRole.set(role, totals);
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

  stop(): void {
    this.eventLoop.disable();
  }
}
