// All configuration comes from the environment, parsed once here (docs/style.md §5). Nothing else in
// Hippo reads the environment: main.ts and chat.ts pass the parsed Config down.
import { isIP } from 'node:net';
import { z } from 'zod';
import { blockedAddressReason } from './tools/web-address.js';

/** The 32-byte key from base64 (44 characters) or hex (64 characters); null when it is neither. */
export function decodeEncryptionKey(text: string): Buffer | null {
  const value = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(value)
      ? Buffer.from(value, 'base64')
      : null;
  return key?.length === 32 ? key : null;
}

const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');
const optionalText = z.string().trim().min(1).optional();
const url = z.url({ protocol: /^https?$/ });
/**
 * A comma-separated list of platform ids (Slack U…/W…/S…/C…, Discord snowflakes, the word `dm`);
 * names like "@ada" or "#general" are refused, since nothing could ever match them.
 */
const idList = z
  .string()
  .optional()
  .transform((value) => (value ?? '').split(',').map((part) => part.trim()).filter((part) => part !== ''))
  .refine((ids) => ids.every((id) => /^[A-Za-z0-9]+$/.test(id)), 'must be comma-separated ids (e.g. U024BE7LH,S0614TZR7 or Discord ids), not names');

/** The environment variables Hippo reads, with defaults. `.env.example` lists exactly these. */
export const configSchema = z.object({
  /** Postgres connection string; unset → embedded PGlite under DATA_DIR. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
    .optional(),
  /** Where PGlite data and session workspaces live. */
  DATA_DIR: z.string().min(1).default('./data'),
  /** HTTP port for /healthz, /readyz, /metrics (unless METRICS_PORT) and /slack/events. */
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Serves /metrics on this port only (not on PORT), e.g. one reachable from the cluster but not the internet. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * The address the METRICS_PORT server binds: loopback by default, so a scrape from another host
   * (a Prometheus in the cluster) needs it set (0.0.0.0, or the pod's address). Not used without METRICS_PORT.
   */
  METRICS_HOST: z
    .string()
    .trim()
    .default('127.0.0.1')
    .refine((host) => host === 'localhost' || isIP(host) !== 0, 'must be an IP address (127.0.0.1, 0.0.0.0, ::) or localhost'),
  /** Set → /metrics answers only requests with `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise). */
  METRICS_TOKEN: z.string().trim().min(16, 'must be at least 16 characters (e.g. from `openssl rand -hex 32`)').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * The API MODEL is called through: `openai`, any OpenAI-compatible Chat Completions endpoint; or
   * `anthropic`, Anthropic's Messages API, the only way Claude caches prompts (memory forks rely on it).
   */
  MODEL_PROVIDER: z.enum(['openai', 'anthropic']).default('openai'),
  OPENAI_API_KEY: optionalText,
  /** Any OpenAI-compatible Chat Completions base URL (vLLM, Ollama, OpenRouter, …). */
  OPENAI_BASE_URL: url.optional(),
  /** The Anthropic API key (MODEL_PROVIDER=anthropic); OPENAI_API_KEY is never sent to Anthropic. */
  ANTHROPIC_API_KEY: optionalText,
  /** The Anthropic API base URL without /v1 (proxies, gateways, tests); unset: https://api.anthropic.com. */
  ANTHROPIC_BASE_URL: url.optional(),
  MODEL: optionalText,
  /** Tokens; overrides the built-in table of context windows. */
  MODEL_CONTEXT_WINDOW: z.coerce.number().int().min(1024).optional(),
  /** One attempt of a model call fails when the endpoint sends nothing for this long, in seconds. */
  MODEL_TIMEOUT_SECONDS: z.coerce.number().min(1).max(3600).default(120),
  /** Attempts per model call (the first included) before it fails with the session's error note. */
  MODEL_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5),
  /**
   * The longest a model call waits for its answer to start, over all attempts and back-offs, in
   * seconds; then it fails with the session's error note. An answer that is streaming is not cut.
   */
  MODEL_TOTAL_TIMEOUT_SECONDS: z.coerce.number().min(1).max(7200).default(300),
  /** Whether MODEL accepts images (image parts); overrides the built-in table (unknown models: false). */
  MODEL_IMAGES: boolean.optional(),
  /**
   * Node's own switch: model calls and Slack Web API calls go through HTTP_PROXY / HTTPS_PROXY
   * (except NO_PROXY) when set, as Node's fetch does with it.
   */
  NODE_USE_ENV_PROXY: boolean.default(false),
  /** Memory runs fire every time the context grows by this percent of the window (R2). */
  MEMORY_STEP_PERCENT: z.coerce.number().int().min(1).max(50).default(3),
  /** Which conversations share memory documents. */
  MEMORY_SCOPE: z.enum(['channel', 'thread', 'workspace']).default('channel'),
  /**
   * No decider fork below this percent of the window. 0 (with EVERY 1) is the seed's rhythm, a
   * decider with every summarizer (R3); 50 / 2 is the economy setting (see docs/memory.md).
   */
  MEMORY_DECIDER_FLOOR_PERCENT: z.coerce.number().int().min(0).max(100).default(0),
  /** Above the floor, a decider every this many triggered steps (the summarizer forks every step). */
  MEMORY_DECIDER_EVERY: z.coerce.number().int().min(1).max(20).default(1),
  /** R19: at this percent of the window the next worker call gets a reset first, asked by the system. */
  MEMORY_HARD_LIMIT_PERCENT: z.coerce.number().int().min(20).max(95).default(85),
  /** R20: a reset carries over at most this percent of the window (older tool results become stubs). */
  MEMORY_CARRY_BUDGET_PERCENT: z.coerce.number().int().min(5).max(60).default(30),
  /**
   * Prices of MODEL in US dollars per million tokens, as JSON, overriding the built-in table:
   * {"input":1.25,"cached_input":0.125,"output":10} (optional "cache_write" for providers that bill it).
   */
  MODEL_PRICES: z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'must be JSON like {"input":1.25,"cached_input":0.125,"output":10}' });
        return z.NEVER;
      }
    })
    .pipe(z.object({ input: z.number().min(0), cached_input: z.number().min(0), output: z.number().min(0), cache_write: z.number().min(0).optional() }).strict())
    .optional(),
  /**
   * R21: a run (the worker's model calls after a person's message or a resume) stops, as if
   * paused, after this many steps; a reply or resume continues it. See docs/configuration.md.
   */
  RUN_MAX_STEPS: z.coerce.number().int().min(1).max(100_000).default(50),
  /** Spend cap per session in US dollars (unset: none); at 80% a note, at 100% the worker stops. */
  SESSION_BUDGET_USD: z.coerce.number().positive().optional(),
  /** Spend cap per channel and UTC day in US dollars (unset: none). */
  CHANNEL_DAILY_BUDGET_USD: z.coerce.number().positive().optional(),
  /**
   * Who may edit, revert and pin memory (comma-separated Slack user ids and user group ids "S…",
   * Discord user ids and role ids); unset → every member of the conversation. Viewing stays with members.
   */
  MEMORY_EDITORS: z.string().regex(/^[\w\s,-]*$/, 'must be comma-separated user, user group or role ids').optional(),
  SLACK_BOT_TOKEN: z.string().startsWith('xoxb-', 'must be a bot token starting with xoxb-').optional(),
  SLACK_SIGNING_SECRET: optionalText,
  /** Set → Slack Socket Mode instead of the HTTP Events API. */
  SLACK_APP_TOKEN: z.string().startsWith('xapp-', 'must be an app-level token starting with xapp-').optional(),
  /** Slack Web API base URL (proxies, tests). */
  SLACK_API_URL: url.optional(),
  /** How Slack lays out a run's task cards (tool calls, the TODO.md plan): a timeline or a plan. */
  SLACK_TASK_DISPLAY: z.enum(['timeline', 'plan']).default('timeline'),
  /** OAuth (many workspaces): the app's client id, from Basic Information → App Credentials. */
  SLACK_CLIENT_ID: optionalText,
  SLACK_CLIENT_SECRET: optionalText,
  /** Signs the OAuth `state`; unset → derived from SLACK_CLIENT_SECRET. */
  SLACK_STATE_SECRET: optionalText,
  /** 32 bytes, base64 or hex: encrypts installation tokens at rest (AES-256-GCM). */
  SLACK_TOKEN_ENCRYPTION_KEY: z
    .string()
    .refine((value) => decodeEncryptionKey(value) !== null, 'must be 32 bytes, base64 (44 characters) or hex (64 characters), e.g. from `openssl rand -base64 32`')
    .optional(),
  DISCORD_BOT_TOKEN: optionalText,
  /** Discord REST base URL (proxies, tests). */
  DISCORD_API_URL: url.optional(),
  /** Guild ids (comma-separated) to register slash commands in; unset → global commands. */
  DISCORD_GUILD_IDS: z.string().optional(),
  /**
   * `on`: Slack unfurls and Discord embeds links in what Hippo posts. `off` (the default): neither
   * platform fetches a link from an answer (a URL can carry what the model read to its host).
   */
  LINK_PREVIEWS: z.enum(['on', 'off']).default('off'),
  /**
   * Slack team ids (T…) and Discord guild ids Hippo works in; events, installs and commands from
   * anywhere else are refused quietly and stored nowhere. Unset → wherever the bot is installed.
   */
  ALLOWED_WORKSPACES: idList,
  /** Who may start sessions and steer them (Slack users and user groups, Discord users and roles); unset → anyone. */
  ALLOWED_USERS: idList,
  /** Where sessions may start (channel ids; `dm` for direct messages); unset → anywhere Hippo is. */
  ALLOWED_CHANNELS: idList,
  /** May do everything anywhere, including resetting sessions they did not start. */
  ADMIN_USERS: idList,
  /** Tool groups the worker gets, comma-separated: memory, workspace, web, shell, mcp. */
  TOOLS: z.string().default('memory,workspace,web'),
  /** Let web_fetch reach loopback, private and link-local addresses. */
  WEB_FETCH_ALLOW_PRIVATE: boolean.default(false),
  /** Shell tool time limit per command, in seconds. */
  SHELL_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  /** User shell commands run as when Hippo runs as root (never root itself). */
  SHELL_USER: z.string().trim().min(1).default('nobody'),
  /** Run shell commands without a sandbox when none is available (they can then read the bot's secrets). */
  SHELL_UNSANDBOXED: boolean.default(false),
  /** Let sandboxed shell commands use the network (they then reach what the bot's host reaches). */
  SHELL_NETWORK: boolean.default(false),
  /** Most processes (and threads) a shell command's user may have at once (RLIMIT_NPROC). */
  SHELL_MAX_PROCESSES: z.coerce.number().int().min(8).max(1_000_000).default(256),
  /** Most mebibytes of memory one process of a shell command may allocate (RLIMIT_DATA). */
  SHELL_MAX_MEMORY_MB: z.coerce.number().int().min(16).max(1_000_000).default(2048),
  /** Comma-separated names of further environment variables passed to shell commands. */
  SHELL_ENV_PASSTHROUGH: z.string().default('').transform((value) => value.split(',').map((name) => name.trim()).filter((name) => name !== '')),
  /** Most mebibytes of files in one session workspace. */
  WORKSPACE_MAX_MB: z.coerce.number().int().min(1).max(1_000_000).default(100),
  /** Most files and directories in one session workspace. */
  WORKSPACE_MAX_FILES: z.coerce.number().int().min(1).max(10_000_000).default(2000),
  /**
   * How WORKSPACE_MAX_MB holds against shell commands: `auto` makes each workspace a filesystem of
   * that size where Hippo runs as root with loop devices (else the sampler, with a warning);
   * `filesystem` requires it (start-up stops without); `sampler` measures every 250 ms.
   */
  WORKSPACE_QUOTA: z.enum(['auto', 'filesystem', 'sampler']).default('auto'),
  /** Largest file, in mebibytes, a file tool writes (and a shell command may write). */
  WORKSPACE_MAX_FILE_MB: z.coerce.number().int().min(1).max(1_000_000).default(16),
  /** Largest file, in mebibytes, saved from a message into the workspace or sent with an answer. */
  FILE_MAX_MB: z.coerce.number().min(1).max(1_000).default(20),
  /** Workspaces unused for this many days are removed (0: kept forever). */
  WORKSPACE_RETENTION_DAYS: z.coerce.number().min(0).max(36_500).default(30),
  /** Path of a JSON file in the common `mcpServers` format. */
  MCP_CONFIG: optionalText,
  /**
   * R23: which tool calls wait for a person, comma-separated selectors (docs/security.md
   * "Approvals"): tool groups, `mcp:<server>`, `mcp:<server>/<tool>`, tool names, or `none`.
   * A group or server selector skips tools marked read-only. Default: shell commands and MCP tools
   * their server does not mark read-only.
   */
  APPROVAL_REQUIRED: z.string().default('shell,mcp'),
  /** R23: selectors (as APPROVAL_REQUIRED's) of tools that never wait for a person; they win. */
  APPROVAL_EXEMPT: z.string().default(''),
  /** R23: who decides tool calls (users, Slack user groups, Discord roles) besides admins; unset → the session's starter. */
  APPROVERS: idList,
  /** R23: a call nobody decides within this many seconds is denied, with a note to the model. */
  APPROVAL_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(7 * 24 * 3600).default(3600),
  /** A replica that stops renewing a session lease for this long loses it to another replica. */
  LEASE_TTL_SECONDS: z.coerce.number().min(1).max(600).default(15),
  /**
   * What this process does (docs/operations.md "Process roles"): `all` receives and drives;
   * `ingest` verifies, stores and acknowledges messages and sends the outbox, never driving a
   * session; `worker` drives sessions and never serves Slack's endpoint or Discord's gateway.
   */
  HIPPO_ROLE: z.enum(['all', 'ingest', 'worker']).default('all'),
});

export type Config = z.infer<typeof configSchema>;

/** The variable names the schema reads. */
export const configKeys = Object.keys(configSchema.shape) as (keyof Config)[];

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: string[] };

/** Parses the environment; each problem becomes one line naming the variable. */
export function parseConfig(env: Record<string, string | undefined>): ConfigResult {
  // Treat empty strings as unset, as most .env loaders and shells do.
  const present = Object.fromEntries(
    configKeys.map((key) => [key, env[key] === '' ? undefined : env[key]]),
  );
  const result = configSchema.safeParse(present);
  if (result.success) return { ok: true, config: result.data };
  const errors = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    const value = present[name];
    const reason = value === undefined ? 'is required' : issue.message;
    return `config: ${name} ${reason}`;
  });
  return { ok: false, errors };
}

/** What `npm start` cannot run with, one line each (the terminal chat has its own). */
export function serviceProblems(config: Config): string[] {
  if (config.HIPPO_ROLE === 'all' || config.DATABASE_URL) return [];
  return [`config: HIPPO_ROLE=${config.HIPPO_ROLE} needs DATABASE_URL: processes of different roles share one Postgres (the embedded database belongs to one process)`];
}

/**
 * Settings that parse but probably do not do what the operator meant; one line each, for a warning
 * at start-up. `service` adds the checks that only matter to the bot service (chat adapters).
 */
export function configWarnings(config: Config, options: { service: boolean }): string[] {
  const warnings: string[] = [];
  const groups = config.TOOLS.split(',').map((group) => group.trim().toLowerCase());
  if (config.MCP_CONFIG && !groups.includes('mcp')) {
    warnings.push(`MCP_CONFIG is set but TOOLS (${config.TOOLS}) does not include mcp: its servers are not started; add mcp to TOOLS`);
  }
  if (groups.includes('mcp') && !config.MCP_CONFIG) warnings.push('TOOLS includes mcp but MCP_CONFIG is not set: there are no MCP tools');
  warnings.push(...modelProviderWarnings(config));
  if (!options.service) return warnings;
  // Slack's credentials are a bot token (one workspace) or the OAuth client (many workspaces).
  const oauth = Boolean(config.SLACK_CLIENT_ID || config.SLACK_CLIENT_SECRET);
  const credentials = config.SLACK_BOT_TOKEN ? 'SLACK_BOT_TOKEN' : oauth ? 'SLACK_CLIENT_ID' : null;
  if (credentials && !config.SLACK_SIGNING_SECRET && !config.SLACK_APP_TOKEN) {
    warnings.push(`${credentials} is set but neither SLACK_SIGNING_SECRET (Events API) nor SLACK_APP_TOKEN (Socket Mode): Slack is not started`);
  }
  if (!credentials && (config.SLACK_SIGNING_SECRET || config.SLACK_APP_TOKEN)) {
    warnings.push('SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set without SLACK_BOT_TOKEN (or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET): Slack is not started');
  }
  const anySlack = Boolean(credentials || config.SLACK_SIGNING_SECRET || config.SLACK_APP_TOKEN);
  if (!anySlack && !config.DISCORD_BOT_TOKEN) {
    warnings.push('no chat platform is configured, so nobody can reach the bot: set SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN (docs/slack.md, docs/discord.md), or talk to it with npm run chat');
  }
  return warnings;
}

/**
 * The start-up notice when no spend cap is set (both are unset by default): then only
 * RUN_MAX_STEPS bounds what one run may spend (R21), and nothing bounds a session or a channel.
 */
export function spendWarnings(config: Config): string[] {
  if (config.SESSION_BUDGET_USD !== undefined || config.CHANNEL_DAILY_BUDGET_USD !== undefined) return [];
  return [`no spend cap is set (SESSION_BUDGET_USD, CHANNEL_DAILY_BUDGET_USD): only the step limit (RUN_MAX_STEPS=${config.RUN_MAX_STEPS}) bounds a run, and nothing bounds what a session or a channel spends; set one of them to cap it (docs/configuration.md)`];
}

/**
 * The start-up notice when /metrics is public: on PORT (every address; Slack's Events API makes it
 * face the internet) or on METRICS_PORT bound to an address that is not loopback, without METRICS_TOKEN.
 */
export function metricsWarnings(config: Config): string[] {
  if (config.METRICS_TOKEN !== undefined) return [];
  const what = 'whoever reaches it reads the model spend, session and error counts (and the process metrics)';
  if (config.METRICS_PORT === undefined) {
    return [`/metrics is served on PORT (${config.PORT}, every address) without METRICS_TOKEN: ${what}; set METRICS_PORT (bound to METRICS_HOST, 127.0.0.1 unless set) or METRICS_TOKEN`];
  }
  if (isLoopbackHost(config.METRICS_HOST)) return [];
  return [`/metrics is served on METRICS_PORT (${config.METRICS_PORT}) at METRICS_HOST=${config.METRICS_HOST} without METRICS_TOKEN: ${what}; set METRICS_TOKEN, or keep METRICS_HOST on a network only the scraper reaches`];
}

/** localhost, or an address web_fetch's classifier calls loopback (127.0.0.0/8, ::1, ::ffff:127.x). */
export function isLoopbackHost(host: string): boolean {
  return host.toLowerCase() === 'localhost' || blockedAddressReason(host) === 'loopback';
}

/** The base URL the provider's key is sent to when it goes in clear: http:// to a host that is not loopback. */
function cleartextModelEndpoint(config: Config): { setting: string; key: string; url: URL } | undefined {
  const anthropic = config.MODEL_PROVIDER === 'anthropic';
  const value = anthropic ? config.ANTHROPIC_BASE_URL : config.OPENAI_BASE_URL;
  if (value === undefined) return undefined;
  const url = new URL(value);
  if (url.protocol !== 'http:' || isLoopbackHost(url.hostname)) return undefined;
  return { setting: anthropic ? 'ANTHROPIC_BASE_URL' : 'OPENAI_BASE_URL', key: anthropic ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY', url };
}

/** Model settings that parse but are ignored, defeat the prompt cache, or send the key in clear. */
function modelProviderWarnings(config: Config): string[] {
  const warnings: string[] = [];
  const cleartext = cleartextModelEndpoint(config);
  if (cleartext) {
    warnings.push(`${cleartext.setting} is http:// to ${cleartext.url.host}, not a loopback address: ${cleartext.key} and every prompt cross the network unencrypted; use https:// (or a proxy on this machine)`);
  }
  if (config.MODEL_PROVIDER === 'anthropic') {
    if (config.OPENAI_BASE_URL) warnings.push('OPENAI_BASE_URL is set but MODEL_PROVIDER=anthropic: it is not used (ANTHROPIC_BASE_URL is the Anthropic setting)');
    if (config.ANTHROPIC_BASE_URL && /\/v1\/?$/.test(config.ANTHROPIC_BASE_URL)) {
      warnings.push('ANTHROPIC_BASE_URL ends in /v1, which the Anthropic client adds itself: calls would go to /v1/v1/messages; remove the /v1');
    }
    return warnings;
  }
  if (config.ANTHROPIC_API_KEY || config.ANTHROPIC_BASE_URL) {
    warnings.push('ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set but MODEL_PROVIDER is openai: they are not used; set MODEL_PROVIDER=anthropic to call Claude through the Messages API');
  }
  if (/claude/i.test(config.MODEL ?? '') && config.OPENAI_BASE_URL && /(^|\.)anthropic\.com$/.test(new URL(config.OPENAI_BASE_URL).hostname)) {
    warnings.push('MODEL is a Claude model on Anthropic\'s OpenAI-compatible endpoint, which caches no prompts: every memory fork re-reads the whole context at full price; set MODEL_PROVIDER=anthropic and ANTHROPIC_API_KEY');
  }
  return warnings;
}

/** Checks what the agent needs to talk to a model; returns one line per missing variable. */
export function missingModelSettings(config: Config): string[] {
  const missing: string[] = [];
  const anthropic = config.MODEL_PROVIDER === 'anthropic';
  if (anthropic && !config.ANTHROPIC_API_KEY) missing.push('config: ANTHROPIC_API_KEY is required with MODEL_PROVIDER=anthropic (an API key from the Anthropic Console)');
  if (!anthropic && !config.OPENAI_API_KEY) missing.push('config: OPENAI_API_KEY is required (the key for your OpenAI-compatible endpoint)');
  if (!config.MODEL) missing.push(`config: MODEL is required (e.g. MODEL=${anthropic ? 'claude-sonnet-4-5' : 'gpt-4.1'})`);
  return missing;
}
