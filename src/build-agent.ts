// Builds the agent from configuration: model client, storage ports, tools, settings. Shared by
// the bot service (src/service.ts) and the terminal chat (src/chat.ts).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { ModelHealth } from './adapters/model/model-health.js';
import type { AnthropicModelClient } from './adapters/model/anthropic-model-client.js';
import { OpenAIModelClient } from './adapters/model/openai-model-client.js';
import type { Database } from './adapters/storage/database.js';
import { createLeaseStore } from './adapters/storage/lease-store.js';
import { createPrismaStores } from './adapters/storage/prisma-stores.js';
import { traceContextStore } from './adapters/storage/trace-context-store.js';
import { startTracing } from './adapters/telemetry/otel-setup.js';
import { RunTraces } from './adapters/telemetry/run-traces.js';
import { LocalWakeups, PostgresWakeups } from './adapters/storage/wakeups.js';
import { missingModelSettings, type Config } from './config.js';
import { Agent } from './core/agent.js';
import { defaultAgentSettings, type AgentDeps } from './core/agent-context.js';
import { contextWindowFor } from './core/loop/context-window.js';
import { resolveApprovalPolicy } from './core/approval-policy.js';
import { pricesFor } from './core/prices.js';
import { ConfigError } from './core/errors.js';
import { EventBus } from './core/events.js';
import { memoryTools } from './core/memory/memory-tools.js';
import type { Stores } from './core/store.js';
import type { AnyTool } from './core/tool.js';
import { ToolExecutor } from './core/loop/tool-executor.js';
import type { Logger } from './log.js';
import { Metrics } from './metrics.js';
import { parseToolGroups, selectToolGroups } from './tools/registry.js';
import { shellTools } from './tools/shell.js';
import { detectShellSandbox } from './tools/shell-sandbox.js';
import type { WorkspaceLimits } from './tools/workspace-quota.js';
import { webTools } from './tools/web.js';
import { sweepIdleWorkspaces, workspaceTools } from './tools/workspace.js';
import { WorkspaceAttachments } from './tools/workspace-attachments.js';
import { startWorkspaceDisks, workspaceImagesDirectory, type WorkspaceDisks } from './tools/workspace-disks.js';
import { attachFileTool } from './tools/attach-file.js';
import { modelAcceptsImages } from './core/loop/model-images.js';
import { imageLimitsFor } from './core/image-limits.js';

const MiB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** How often idle workspaces are looked for. */
const WORKSPACE_SWEEP_INTERVAL_MS = 6 * 60 * 60 * 1000;

/** Removes workspaces idle for `maxIdleMs` now and every few hours; the timer does not hold the process. */
function startWorkspaceSweeper(root: string, maxIdleMs: number, log: Logger, disks: WorkspaceDisks): NodeJS.Timeout {
  const sweep = (): void => {
    sweepIdleWorkspaces(root, maxIdleMs, Date.now(), disks).then(
      (removed) => removed > 0 && log.info({ removed }, 'workspaces-swept'),
      (error: unknown) => log.warn({ err: String(error) }, 'workspace-sweep-failed'),
    );
  };
  sweep();
  return setInterval(sweep, WORKSPACE_SWEEP_INTERVAL_MS).unref();
}

/** The client of MODEL_PROVIDER; the Anthropic SDK is loaded only when it is the one used. */
async function modelClientFor(config: Config, log: Logger): Promise<OpenAIModelClient | AnthropicModelClient> {
  const limits = { timeoutMs: config.MODEL_TIMEOUT_SECONDS * 1000, maxRetries: config.MODEL_MAX_ATTEMPTS - 1, totalTimeoutMs: config.MODEL_TOTAL_TIMEOUT_SECONDS * 1000, log, proxyFromEnvironment: config.NODE_USE_ENV_PROXY };
  if (config.MODEL_PROVIDER === 'anthropic') {
    const { AnthropicModelClient } = await import('./adapters/model/anthropic-model-client.js');
    return new AnthropicModelClient({ apiKey: config.ANTHROPIC_API_KEY ?? '', ...(config.ANTHROPIC_BASE_URL ? { baseURL: config.ANTHROPIC_BASE_URL } : {}), ...limits });
  }
  return new OpenAIModelClient({ apiKey: config.OPENAI_API_KEY ?? '', ...(config.OPENAI_BASE_URL ? { baseURL: config.OPENAI_BASE_URL } : {}), ...limits });
}

export interface BuiltAgent {
  agent: Agent;
  stores: Stores;
  events: EventBus;
  metrics: Metrics;
  /** The model endpoint's status (start() looks at it; real calls keep it current). */
  modelHealth: ModelHealth;
  /** Saves shared files into workspaces (chat adapters register their downloads) and reads them back. */
  attachments: WorkspaceAttachments;
  /** The run traces, when OTEL_* asks for them (undefined: no SDK part was created). */
  traces?: RunTraces;
  /** Closes MCP servers and sends the last spans; stop the agent first. */
  close(): Promise<void>;
}

export interface BuildAgentOptions {
  config: Config;
  database: Database;
  log: Logger;
  /** The process environment the shell tool starts from (secrets are removed by the tool). */
  environment: Record<string, string | undefined>;
}

/** Wires the agent; throws ConfigError when the model settings or TOOLS are unusable. */
export async function buildAgent(options: BuildAgentOptions): Promise<BuiltAgent> {
  const { config, database, log } = options;
  const missing = missingModelSettings(config);
  if (missing.length > 0 || !config.MODEL) throw new ConfigError(`${missing.join('; ')}: needed to run the agent`);
  // Traces only when OTEL_* names an endpoint: otherwise no provider, exporter or wrapper exists.
  // Read before anything starts, so a bad endpoint stops start-up with nothing left open.
  const tracing = startTracing(options.environment);
  // Replicas on one Postgres hear of each other's messages through NOTIFY, which the intake
  // statement sends itself on the intake pool.
  const shared = database.pool && database.ackPool && config.DATABASE_URL ? { pool: database.pool, ackPool: database.ackPool, url: config.DATABASE_URL } : undefined;
  const stores = createPrismaStores(database.prisma, { ackPool: shared?.ackPool, pool: database.pool });
  const window = contextWindowFor(config.MODEL, config.MODEL_CONTEXT_WINDOW);
  if (!window.known) log.warn({ model: config.MODEL, contextWindow: window.tokens }, 'model-window-unknown: set MODEL_CONTEXT_WINDOW');
  const groups = parseToolGroups(config.TOOLS);
  const workspaces = resolve(join(config.DATA_DIR, 'workspaces'));
  const limits: WorkspaceLimits = { maxBytes: config.WORKSPACE_MAX_MB * MiB, maxFiles: config.WORKSPACE_MAX_FILES, maxFileBytes: config.WORKSPACE_MAX_FILE_MB * MiB };
  const images = modelAcceptsImages(config.MODEL, config.MODEL_IMAGES);
  // R22: images are made to fit what MODEL_PROVIDER documents it takes, when they are saved.
  const imageLimits = imageLimitsFor(config.MODEL_PROVIDER, defaultAgentSettings.requestMaxImages);
  // A filesystem of WORKSPACE_MAX_MB per workspace where the machine allows it (docs/security.md
  // "Workspace disks"); otherwise one warning line here and the sampler.
  const disks = await startWorkspaceDisks({
    root: workspaces, images: workspaceImagesDirectory(config.DATA_DIR), limits, log, mode: config.WORKSPACE_QUOTA, shell: groups.includes('shell'),
  });
  const attachments = new WorkspaceAttachments({
    root: workspaces, limits, maxFileBytes: Math.round(config.FILE_MAX_MB * MiB), images, imageLimits, log, disks,
  });
  // Found before anything starts: no sandbox (and SHELL_UNSANDBOXED unset) stops start-up here.
  const sandbox = groups.includes('shell')
    ? await detectShellSandbox({ root: workspaces, shellUser: config.SHELL_USER, allowUnsandboxed: config.SHELL_UNSANDBOXED, network: config.SHELL_NETWORK })
    : undefined;
  if (sandbox?.kind === 'none') log.warn('shell-unsandboxed: SHELL_UNSANDBOXED=true and no sandbox works here; shell commands can read the bot\'s secrets');
  else if (sandbox) log.info({ sandbox: sandbox.kind, user: sandbox.user ? 'one per session' : 'the bot\'s', checkedAs: sandbox.user?.name, network: sandbox.network }, 'shell-sandbox-ready');
  // The MCP SDK is loaded only when MCP tools are configured.
  const mcp = groups.includes('mcp') && config.MCP_CONFIG
    ? await (await import('./tools/mcp.js')).McpToolSource.start({ configPath: config.MCP_CONFIG, log })
    : undefined;
  const groupOf = new Map<string, string>();
  const tools: AnyTool[] = selectToolGroups(groups, {
    memory: () => memoryTools(stores),
    workspace: () => [...workspaceTools({ root: workspaces, limits, disks }), attachFileTool(attachments)],
    web: () => webTools({ allowPrivate: config.WEB_FETCH_ALLOW_PRIVATE }),
    shell: () =>
      shellTools({
        root: workspaces, timeoutMs: config.SHELL_TIMEOUT_SECONDS * 1000, env: options.environment,
        envPassthrough: config.SHELL_ENV_PASSTHROUGH, limits, disks, ...(sandbox ? { sandbox } : {}),
        processLimits: { maxProcesses: config.SHELL_MAX_PROCESSES, maxMemoryBytes: config.SHELL_MAX_MEMORY_MB * 1024 * 1024 },
      }),
    ...(mcp ? { mcp: () => mcp.tools() } : {}),
  }, groupOf);
  // R23: which calls wait for a person; a selector naming nothing that exists stops start-up here.
  const approvalPolicy = resolveApprovalPolicy(tools.map((tool) => ({ tool, group: groupOf.get(tool.name) ?? '' })), config.APPROVAL_REQUIRED, config.APPROVAL_EXEMPT);
  // Shared files land in workspaces whatever the tool groups, so idle ones are always swept.
  const sweeper = config.WORKSPACE_RETENTION_DAYS > 0
    ? startWorkspaceSweeper(workspaces, config.WORKSPACE_RETENTION_DAYS * DAY_MS, log, disks)
    : undefined;
  const wakeups = shared ? await PostgresWakeups.start(shared.pool, shared.url, log) : new LocalWakeups();
  const events = new EventBus((error, event) => log.error({ err: error, event: event.type }, 'event-listener-failed'));
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const prices = config.MODEL_PRICES
    ? { input: config.MODEL_PRICES.input, cachedInput: config.MODEL_PRICES.cached_input, output: config.MODEL_PRICES.output, ...(config.MODEL_PRICES.cache_write === undefined ? {} : { cacheWrite: config.MODEL_PRICES.cache_write }) }
    : null;
  if (!pricesFor(config.MODEL, prices ?? undefined)) log.warn({ model: config.MODEL }, 'model-prices-unknown: set MODEL_PRICES to see and cap spend');
  const metrics = new Metrics({ events, prices: (model) => pricesFor(model, model === config.MODEL ? prices ?? undefined : undefined) });
  const modelClient = await modelClientFor(config, log);
  const modelHealth = new ModelHealth(modelClient, {
    check: () => modelClient.checkEndpoint(),
    ...(modelClient instanceof OpenAIModelClient ? {} : { isUnreachable: (error) => modelClient.isUnreachable(error) }),
    log,
  });
  const traces = tracing
    ? new RunTraces({ tracer: tracing.tracer, captureContent: tracing.captureContent, provider: config.MODEL_PROVIDER, saveContext: saveTraceContext(traceContextStore(database.prisma), log) })
    : undefined;
  if (tracing && traces) {
    traces.subscribe(events);
    log.info({ endpoint: tracing.endpoint, captureContent: tracing.captureContent }, 'traces-on');
  }
  const counted = metrics.instrument(modelHealth);
  // The intake (what a platform's ack waits for) is timed in /metrics.
  const timedStores: Stores = { ...stores, steers: metrics.instrumentIntake(stores.steers) };
  const deps: AgentDeps = {
    settings: {
      ...defaultAgentSettings, model: config.MODEL, contextWindow: window.tokens, stepPercent: config.MEMORY_STEP_PERCENT, memoryScope: config.MEMORY_SCOPE,
      deciderFloorPercent: config.MEMORY_DECIDER_FLOOR_PERCENT, deciderEvery: config.MEMORY_DECIDER_EVERY, prices,
      hardLimitPercent: config.MEMORY_HARD_LIMIT_PERCENT, carryBudgetPercent: config.MEMORY_CARRY_BUDGET_PERCENT, runMaxSteps: config.RUN_MAX_STEPS,
      sessionBudgetUsd: config.SESSION_BUDGET_USD ?? null, channelDailyBudgetUsd: config.CHANNEL_DAILY_BUDGET_USD ?? null, images,
      imageLimits, requestMaxImages: Math.min(defaultAgentSettings.requestMaxImages, imageLimits.maxImagesPerRequest),
    },
    replica: {
      role: config.HIPPO_ROLE,
      owner,
      leases: metrics.instrumentLeases(createLeaseStore(database.prisma, database.pool)),
      wakeups,
      leaseTtlMs: config.LEASE_TTL_SECONDS * 1000,
      sweepIntervalMs: Math.max(500, Math.floor((config.LEASE_TTL_SECONDS * 1000) / 3)),
      // A follow-up within a few seconds (common in a thread) reuses the lease instead of
      // claiming it again; the lease is still given up well before another replica would wait.
      leaseIdleGraceMs: Math.min(5_000, Math.floor((config.LEASE_TTL_SECONDS * 1000) / 3)),
    },
    stores: timedStores,
    model: traces ? traces.instrument(counted) : counted,
    tools: new ToolExecutor(tools),
    events,
    log,
    clock: { now: () => new Date() },
    attachments,
    approvals: { policy: approvalPolicy, timeoutMs: config.APPROVAL_TIMEOUT_SECONDS * 1000, pollMs: 5_000 },
  };
  log.info({ model: config.MODEL, provider: config.MODEL_PROVIDER, contextWindow: window.tokens, images, tools: tools.map((tool) => tool.name), approvals: approvalPolicy.tools }, 'agent-ready');
  return {
    agent: new Agent(deps),
    stores: timedStores,
    events,
    metrics,
    modelHealth,
    attachments,
    ...(traces ? { traces } : {}),
    close: async () => {
      modelHealth.stop();
      if (sweeper) clearInterval(sweeper);
      await mcp?.close();
      await wakeups.close();
      await traces?.settled();
      await tracing?.shutdown().catch((error: unknown) => log.warn({ err: String(error) }, 'traces-flush-failed'));
    },
  };
}

/** The trace context writer, logging (not throwing) a failure: a trace never fails a run. */
function saveTraceContext(save: (sessionId: string, traceparent: string | null) => Promise<void>, log: Logger) {
  return (sessionId: string, traceparent: string | null): Promise<void> =>
    save(sessionId, traceparent).catch((error: unknown) => log.warn({ sessionId, err: String(error) }, 'trace-context-save-failed'));
}
