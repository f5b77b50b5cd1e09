// AgentDeps for core's unit tests: the scripted model, real tools, and no database. Only the usage
// store is there (it keeps the rows it is given); any other store a test reaches fails with a
// one-line error naming it, so a unit test that needs Postgres says so instead of hanging.
import { defaultAgentSettings, type AgentDeps, type AgentSettings } from '../../src/core/agent-context.js';
import { EventBus, type AgentEvent } from '../../src/core/events.js';
import { ToolExecutor } from '../../src/core/loop/tool-executor.js';
import type { Stores } from '../../src/core/store.js';
import type { ModelCallRecord } from '../../src/core/store/usage.js';
import type { AnyTool } from '../../src/core/tool.js';
import { createLogger } from '../../src/log.js';
import type { ScriptedModel } from './scripted-model.js';

export interface CoreDeps extends AgentDeps {
  /** The usage rows core recorded (R14), in order. */
  usageRows: ModelCallRecord[];
  /** Every event core emitted. */
  events: EventBus & { seen: AgentEvent[] };
}

export function coreDeps(options: { model: ScriptedModel; tools?: AnyTool[]; settings?: Partial<AgentSettings> }): CoreDeps {
  const usageRows: ModelCallRecord[] = [];
  const usage: Pick<Stores['usage'], 'record'> = {
    record: async (row) => {
      usageRows.push(row);
    },
  };
  const stores = new Proxy({ usage } as Partial<Stores>, {
    get(target, name) {
      const store = target[name as keyof Stores];
      if (store) return store;
      throw new Error(`coreDeps: this unit test has no ${String(name)} store (no database); use an integration test for it`);
    },
  }) as Stores;
  const bus = new EventBus((error) => {
    throw error;
  });
  const seen: AgentEvent[] = [];
  bus.subscribe((event) => void seen.push(event));
  return {
    settings: { ...defaultAgentSettings, model: 'test-model', contextWindow: 100_000, ...options.settings },
    replica: {
      owner: 'unit', leaseTtlMs: 10_000, sweepIntervalMs: 500, leaseIdleGraceMs: 0,
      get leases(): never {
        throw new Error('coreDeps: this unit test has no leases (no database)');
      },
      get wakeups(): never {
        throw new Error('coreDeps: this unit test has no wake-ups (no database)');
      },
    },
    stores,
    model: options.model,
    tools: new ToolExecutor(options.tools ?? []),
    events: Object.assign(bus, { seen }),
    log: createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent'),
    clock: { now: () => new Date() },
    usageRows,
  };
}
