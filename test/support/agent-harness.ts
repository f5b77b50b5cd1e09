// A real agent for tests: Prisma stores on an isolated Postgres database, the real OpenAI client
// pointed at the fake model server (or the real Anthropic client at the fake Messages API), real
// tools. Collects every event.
import { OpenAIModelClient } from '../../src/adapters/model/openai-model-client.js';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { LocalWakeups, PostgresWakeups } from '../../src/adapters/storage/wakeups.js';
import { Agent } from '../../src/core/agent.js';
import { defaultAgentSettings, type AgentDeps, type AgentSettings } from '../../src/core/agent-context.js';
import { EventBus, type AgentEvent } from '../../src/core/events.js';
import { memoryTools } from '../../src/core/memory/memory-tools.js';
import type { Stores, ThreadAddress } from '../../src/core/store.js';
import type { AnyTool } from '../../src/core/tool.js';
import { ToolExecutor } from '../../src/core/loop/tool-executor.js';
import { createLogger } from '../../src/log.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import type { Database } from '../../src/adapters/storage/database.js';
import type { AttachmentSaver } from '../../src/core/attachment-saver.js';
import type { ModelClient } from '../../src/core/model-client.js';

export interface AgentHarness {
  agent: Agent;
  deps: AgentDeps;
  stores: Stores;
  model: FakeModelServer;
  events: AgentEvent[];
  /** Resolves with the first event (already seen or future) matching the predicate. */
  waitForEvent<T extends AgentEvent['type']>(type: T, predicate?: (event: Extract<AgentEvent, { type: T }>) => boolean, timeoutMs?: number): Promise<Extract<AgentEvent, { type: T }>>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  database: Database;
  settings?: Partial<AgentSettings>;
  /** Extra tools after the memory tools. */
  tools?: AnyTool[];
  model?: FakeModelServer;
  toolTimeoutMs?: number;
  /** Replica coordination (default: a lease owner of its own, in-process wake-ups). */
  replica?: Partial<AgentDeps['replica']>;
  /** Saves files shared with messages (default: none, they are only named). */
  attachments?: AttachmentSaver;
  /** `anthropic`: the Anthropic client, at `model` (a test/fakes/fake-anthropic-server.ts). Default openai. */
  provider?: 'openai' | 'anthropic';
  /** The agent's clock (default: the real time). */
  clock?: AgentDeps['clock'];
  /** R23: which tool calls wait for a person (default: none). */
  approvals?: AgentDeps['approvals'];
}

/** The Anthropic client at `url`, loaded only by the tests that use it (its SDK is large). */
async function anthropicClient(url: string): Promise<ModelClient> {
  const { AnthropicModelClient } = await import('../../src/adapters/model/anthropic-model-client.js');
  return new AnthropicModelClient({ apiKey: 'test-key', baseURL: url, maxRetries: 2, baseDelayMs: 5, maxDelayMs: 20 });
}

export async function createAgentHarness(options: HarnessOptions): Promise<AgentHarness> {
  if (options.provider === 'anthropic' && !options.model) throw new Error('the Anthropic harness needs the fake Anthropic server as `model`');
  const model = options.model ?? (await startFakeModelServer());
  // On Postgres the hot statements go to pg's pool, as in the service (build-agent.ts). The intake
  // statement notifies the drivers itself, so it takes the ack pool only where they listen on
  // Postgres: with local wake-ups (two harnesses in one process) the notification is local.
  const wakeups = options.replica?.wakeups ?? new LocalWakeups();
  const ackPool = wakeups instanceof PostgresWakeups ? options.database.ackPool : undefined;
  const stores = createPrismaStores(options.database.prisma, { ackPool, pool: options.database.pool });
  const events: AgentEvent[] = [];
  const waiters = new Set<() => void>();
  const bus = new EventBus((error) => {
    throw error;
  });
  bus.subscribe((event) => {
    events.push(event);
    for (const wake of [...waiters]) wake();
  });
  const log = createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent');
  const deps: AgentDeps = {
    // Forks go at once unless a test asks otherwise: scripted workers often wait for memory runs.
    settings: { ...defaultAgentSettings, model: 'test-model', contextWindow: 100_000, forkAfterWorkerPrefillMs: 0, ...options.settings },
    replica: {
      owner: `test-${Math.random().toString(36).slice(2, 8)}`,
      leases: createLeaseStore(options.database.prisma, options.database.pool),
      leaseTtlMs: 10_000,
      sweepIntervalMs: 500,
      leaseIdleGraceMs: 0,
      ...options.replica,
      wakeups,
    },
    stores,
    model: options.provider === 'anthropic'
      ? await anthropicClient(model.url)
      : new OpenAIModelClient({ apiKey: 'test-key', baseURL: model.url, maxRetries: 2, baseDelayMs: 5, maxDelayMs: 20 }),
    tools: new ToolExecutor([...memoryTools(stores), ...(options.tools ?? [])], options.toolTimeoutMs),
    events: bus,
    log,
    clock: options.clock ?? { now: () => new Date() },
    ...(options.attachments ? { attachments: options.attachments } : {}),
    ...(options.approvals ? { approvals: options.approvals } : {}),
  };
  const agent = new Agent(deps);
  return {
    agent,
    deps,
    stores,
    model,
    events,
    waitForEvent: (type, predicate, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        let seen = 0;
        const check = () => {
          for (; seen < events.length; seen += 1) {
            const event = events[seen];
            if (event?.type === type && (!predicate || predicate(event as never))) {
              waiters.delete(check);
              clearTimeout(timer);
              resolve(event as never);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${type} event within ${timeoutMs} ms; saw: ${events.map((event) => event.type).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: async () => {
      await agent.stop(1_000);
      if (!options.model) await model.close();
    },
  };
}

let counter = 0;

/** A fresh console thread address; in a channel of its own unless one is named. */
export function newThread(channelId?: string): ThreadAddress {
  counter += 1;
  return { platform: 'console', workspaceId: 'local', channelId: channelId ?? `c${Date.now()}-${counter}`, threadKey: `t${Date.now()}-${counter}` };
}

/** A person's message for `submit`. */
export function personMessage(address: ThreadAddress, text: string, author = 'Ada'): { address: ThreadAddress; platformMessageKey: string; authorId: string; authorName: string; text: string } {
  counter += 1;
  return { address, platformMessageKey: `console:${address.threadKey}:${counter}`, authorId: author.toLowerCase(), authorName: author, text };
}
