import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configKeys, configWarnings, isLoopbackHost, metricsWarnings, missingModelSettings, parseConfig, serviceProblems, spendWarnings, type Config } from '../../src/config.js';

describe('HIPPO_ROLE', () => {
  const config = (environment: Record<string, string>): Config => {
    const parsed = parseConfig(environment);
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    return parsed.config;
  };

  it('is all by default; ingest and worker need the Postgres they share', () => {
    expect(config({}).HIPPO_ROLE).toBe('all');
    expect(serviceProblems(config({}))).toEqual([]);
    expect(serviceProblems(config({ HIPPO_ROLE: 'worker' }))).toEqual([
      'config: HIPPO_ROLE=worker needs DATABASE_URL: processes of different roles share one Postgres (the embedded database belongs to one process)',
    ]);
    expect(serviceProblems(config({ HIPPO_ROLE: 'ingest', DATABASE_URL: 'postgresql://h/db' }))).toEqual([]);
    expect(parseConfig({ HIPPO_ROLE: 'both' }).ok).toBe(false);
  });
});

describe('parseConfig', () => {
  it('applies defaults when the environment is empty', () => {
    const result = parseConfig({});
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.DATA_DIR).toBe('./data');
    expect(result.config.PORT).toBe(3000);
    expect(result.config.MEMORY_STEP_PERCENT).toBe(3);
    expect(result.config.MEMORY_SCOPE).toBe('channel');
    expect(result.config.TOOLS).toBe('memory,workspace,web');
    expect(result.config.WEB_FETCH_ALLOW_PRIVATE).toBe(false);
    // Issue #15: the shell is sandboxed and offline unless said otherwise; workspaces are bounded.
    expect([result.config.SHELL_USER, result.config.SHELL_UNSANDBOXED, result.config.SHELL_NETWORK, result.config.SHELL_ENV_PASSTHROUGH]).toEqual(['nobody', false, false, []]);
    expect([result.config.WORKSPACE_MAX_MB, result.config.WORKSPACE_MAX_FILES, result.config.WORKSPACE_MAX_FILE_MB, result.config.WORKSPACE_RETENTION_DAYS]).toEqual([100, 2000, 16, 30]);
  });

  it('reads prices and budgets, and says in one line what a malformed MODEL_PRICES should look like', () => {
    const result = parseConfig({ MODEL_PRICES: '{"input":2,"cached_input":0.5,"output":8}', SESSION_BUDGET_USD: '5', CHANNEL_DAILY_BUDGET_USD: '20' });
    expect(result.ok && [result.config.MODEL_PRICES, result.config.SESSION_BUDGET_USD, result.config.CHANNEL_DAILY_BUDGET_USD]).toEqual([{ input: 2, cached_input: 0.5, output: 8 }, 5, 20]);
    const defaults = parseConfig({});
    // R3: the seed's rhythm ships (a decider with every summarizer); R19/R20 limits at 85 / 30.
    expect(defaults.ok && [defaults.config.MEMORY_DECIDER_FLOOR_PERCENT, defaults.config.MEMORY_DECIDER_EVERY, defaults.config.SESSION_BUDGET_USD]).toEqual([0, 1, undefined]);
    expect(defaults.ok && [defaults.config.MEMORY_HARD_LIMIT_PERCENT, defaults.config.MEMORY_CARRY_BUDGET_PERCENT]).toEqual([85, 30]);
    expect(parseConfig({ MODEL_PRICES: 'cheap' })).toEqual({ ok: false, errors: ['config: MODEL_PRICES must be JSON like {"input":1.25,"cached_input":0.125,"output":10}'] });
    const unknownField = parseConfig({ MODEL_PRICES: '{"input":1,"cached_input":0.1,"output":2,"oops":1}' });
    expect(unknownField.ok).toBe(false);
    expect(parseConfig({ SESSION_BUDGET_USD: '-3' }).ok).toBe(false);
  });

  it('reads SHELL_ENV_PASSTHROUGH as a list of names', () => {
    const result = parseConfig({ SHELL_ENV_PASSTHROUGH: ' GIT_AUTHOR_NAME, ,NPM_CONFIG_REGISTRY ' });
    expect(result.ok && result.config.SHELL_ENV_PASSTHROUGH).toEqual(['GIT_AUTHOR_NAME', 'NPM_CONFIG_REGISTRY']);
  });

  it('reports each invalid variable on its own line naming it', () => {
    const result = parseConfig({ PORT: 'eighty', MEMORY_SCOPE: 'galaxy', DATABASE_URL: 'mysql://x' });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(3);
    expect(result.errors.some((line) => line.startsWith('config: PORT '))).toBe(true);
    expect(result.errors.some((line) => line.startsWith('config: MEMORY_SCOPE '))).toBe(true);
    expect(result.errors.some((line) => line.startsWith('config: DATABASE_URL '))).toBe(true);
    for (const line of result.errors) expect(line).not.toContain('\n');
  });

  it('treats empty strings as unset', () => {
    const result = parseConfig({ DATABASE_URL: '', PORT: '' });
    expect(result.ok && result.config.DATABASE_URL === undefined && result.config.PORT === 3000).toBe(true);
  });

  it('reads the access lists as trimmed ids and refuses names', () => {
    const result = parseConfig({ ALLOWED_USERS: ' U1, S2 ,', ADMIN_USERS: '123456789012345678', ALLOWED_CHANNELS: 'C1,dm' });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.ALLOWED_USERS).toEqual(['U1', 'S2']);
    expect(result.config.ADMIN_USERS).toEqual(['123456789012345678']);
    expect(result.config.ALLOWED_CHANNELS).toEqual(['C1', 'dm']);
    const unset = parseConfig({});
    expect(unset.ok && unset.config.ALLOWED_USERS).toEqual([]);
    const names = parseConfig({ ALLOWED_USERS: '@ada', ALLOWED_CHANNELS: '#general' });
    expect(names.ok).toBe(false);
    if (!names.ok) expect(names.errors).toEqual([expect.stringMatching(/^config: ALLOWED_USERS must be comma-separated ids/), expect.stringMatching(/^config: ALLOWED_CHANNELS /)]);
  });

  it('takes a 32-byte token encryption key in base64 or hex only', () => {
    expect(parseConfig({ SLACK_TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }).ok).toBe(true);
    expect(parseConfig({ SLACK_TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('hex') }).ok).toBe(true);
    const short = parseConfig({ SLACK_TOKEN_ENCRYPTION_KEY: 'too-short' });
    expect(!short.ok && short.errors[0]).toMatch(/^config: SLACK_TOKEN_ENCRYPTION_KEY must be 32 bytes/);
  });

  it('names what to set when the model settings are missing', () => {
    const result = parseConfig({});
    if (!result.ok) throw new Error('unexpected');
    expect(missingModelSettings(result.config).join('\n')).toMatch(/OPENAI_API_KEY[\s\S]*MODEL/);
  });

  it('reads MODEL_PROVIDER (openai by default) and asks for the Anthropic key, never the OpenAI one, with anthropic', () => {
    const defaults = parseConfig({});
    expect(defaults.ok && defaults.config.MODEL_PROVIDER).toBe('openai');
    expect(parseConfig({ MODEL_PROVIDER: 'claude' }).ok).toBe(false);
    const anthropic = parseConfig({ MODEL_PROVIDER: 'anthropic', OPENAI_API_KEY: 'sk-openai' });
    if (!anthropic.ok) throw new Error(anthropic.errors.join('\n'));
    expect(missingModelSettings(anthropic.config)).toEqual([
      'config: ANTHROPIC_API_KEY is required with MODEL_PROVIDER=anthropic (an API key from the Anthropic Console)',
      'config: MODEL is required (e.g. MODEL=claude-sonnet-4-5)',
    ]);
    const complete = parseConfig({ MODEL_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-x', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999', MODEL: 'claude-sonnet-4-5' });
    expect(complete.ok && missingModelSettings(complete.config)).toEqual([]);
    expect(parseConfig({ ANTHROPIC_BASE_URL: 'api.anthropic.com' }).ok).toBe(false);
  });

  it('is documented by .env.example, variable for variable', () => {
    const example = readFileSync(new URL('../../.env.example', import.meta.url), 'utf8');
    const listed = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]);
    expect([...listed].sort()).toEqual([...configKeys].sort());
  });
});

describe('source boundaries', () => {
  it('reads process.env only in the entry points', async () => {
    const { execSync } = await import('node:child_process');
    const hits = execSync("grep -rln 'process\\.env' src --include=*.ts | grep -v '/generated/' || true", { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .sort();
    expect(hits).toEqual(['src/chat.ts', 'src/main.ts'].filter((file) => hits.includes(file)));
  });

  it('lets only src/adapters/storage speak SQL: nothing else imports the generated client, Prisma or pg', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const hits: string[] = [];
    for (const file of readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts') && !name.startsWith('adapters/storage/'))) {
      const source = readFileSync(`src/${file}`, 'utf8');
      // Every module specifier: static imports and re-exports, side-effect imports, import().
      for (const [, , specifier = ''] of source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*(['"])(.+?)\1/g)) {
        if (specifier.includes('prisma/generated') || specifier.startsWith('@prisma/') || specifier === 'pg' || specifier.startsWith('@electric-sql/')) hits.push(`${file}: ${specifier}`);
      }
      if (/\$(queryRaw|executeRaw)/.test(source)) hits.push(`${file}: raw SQL`);
    }
    expect(hits).toEqual([]);
  });

  it('keeps vendor libraries out of src/core (R16): only relative modules, node: built-ins and pure helpers', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const ts = (await import('typescript')).default;
    // Pure, platform-free helpers core may use; chat platforms, the model client and storage may not.
    const allowed = new Set(['zod', 'diff']);
    const hits: string[] = [];
    for (const file of readdirSync('src/core', { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'))) {
      // Every static import, re-export, side-effect import and dynamic import() of the file.
      for (const { fileName } of ts.preProcessFile(readFileSync(`src/core/${file}`, 'utf8'), true, true).importedFiles) {
        if (fileName.startsWith('.') || fileName.startsWith('node:') || allowed.has(fileName)) continue;
        hits.push(`${file}: ${fileName}`);
      }
    }
    expect(hits).toEqual([]);
  });
});

describe('configWarnings', () => {
  const config = (env: Record<string, string>) => {
    const result = parseConfig(env);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    return result.config;
  };

  it('warns when MCP_CONFIG is set but mcp is not in TOOLS, and the other way round', () => {
    expect(configWarnings(config({ MCP_CONFIG: 'mcp.json', DISCORD_BOT_TOKEN: 't' }), { service: true })).toEqual([
      'MCP_CONFIG is set but TOOLS (memory,workspace,web) does not include mcp: its servers are not started; add mcp to TOOLS',
    ]);
    expect(configWarnings(config({ TOOLS: 'memory,MCP', DISCORD_BOT_TOKEN: 't' }), { service: true })).toEqual(['TOOLS includes mcp but MCP_CONFIG is not set: there are no MCP tools']);
    expect(configWarnings(config({ TOOLS: 'memory, mcp', MCP_CONFIG: 'mcp.json', DISCORD_BOT_TOKEN: 't' }), { service: true })).toEqual([]);
  });

  it('warns the service when no chat platform is configured, naming what to set', () => {
    const [warning] = configWarnings(config({}), { service: true });
    expect(warning).toMatch(/^no chat platform is configured.*SLACK_BOT_TOKEN with SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN.*npm run chat$/);
    // The terminal chat is a chat platform of its own.
    expect(configWarnings(config({}), { service: false })).toEqual([]);
  });

  it('names the missing half of a Slack configuration', () => {
    expect(configWarnings(config({ SLACK_BOT_TOKEN: 'xoxb-1' }), { service: true })).toEqual([
      'SLACK_BOT_TOKEN is set but neither SLACK_SIGNING_SECRET (Events API) nor SLACK_APP_TOKEN (Socket Mode): Slack is not started',
    ]);
    expect(configWarnings(config({ SLACK_SIGNING_SECRET: 's' }), { service: true })).toEqual(['SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set without SLACK_BOT_TOKEN (or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET): Slack is not started']);
    expect(configWarnings(config({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1' }), { service: true })).toEqual([]);
  });

  it('takes the OAuth client (many workspaces) as Slack credentials, with no warning when Slack starts', () => {
    const oauth = { SLACK_CLIENT_ID: '1.2', SLACK_CLIENT_SECRET: 'c', SLACK_TOKEN_ENCRYPTION_KEY: 'a'.repeat(64) };
    expect(configWarnings(config({ ...oauth, SLACK_SIGNING_SECRET: 's' }), { service: true })).toEqual([]);
    expect(configWarnings(config({ ...oauth, SLACK_APP_TOKEN: 'xapp-1' }), { service: true })).toEqual([]);
    expect(configWarnings(config(oauth), { service: true })).toEqual([
      'SLACK_CLIENT_ID is set but neither SLACK_SIGNING_SECRET (Events API) nor SLACK_APP_TOKEN (Socket Mode): Slack is not started',
    ]);
  });

  it('warns about model settings that are ignored or defeat the prompt cache', () => {
    const warnings = (env: Record<string, string>) => configWarnings(config(env), { service: false });
    expect(warnings({ ANTHROPIC_API_KEY: 'sk-ant' })).toEqual([
      'ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set but MODEL_PROVIDER is openai: they are not used; set MODEL_PROVIDER=anthropic to call Claude through the Messages API',
    ]);
    expect(warnings({ MODEL: 'claude-sonnet-4-5', OPENAI_BASE_URL: 'https://api.anthropic.com/v1/' })).toEqual([
      'MODEL is a Claude model on Anthropic\'s OpenAI-compatible endpoint, which caches no prompts: every memory fork re-reads the whole context at full price; set MODEL_PROVIDER=anthropic and ANTHROPIC_API_KEY',
    ]);
    // Claude through another OpenAI-compatible gateway is that gateway's business.
    expect(warnings({ MODEL: 'anthropic/claude-sonnet-4.5', OPENAI_BASE_URL: 'https://openrouter.ai/api/v1' })).toEqual([]);
    expect(warnings({ MODEL_PROVIDER: 'anthropic', OPENAI_BASE_URL: 'http://localhost:11434/v1', ANTHROPIC_BASE_URL: 'https://gateway.example/v1' })).toEqual([
      'OPENAI_BASE_URL is set but MODEL_PROVIDER=anthropic: it is not used (ANTHROPIC_BASE_URL is the Anthropic setting)',
      'ANTHROPIC_BASE_URL ends in /v1, which the Anthropic client adds itself: calls would go to /v1/v1/messages; remove the /v1',
    ]);
    expect(warnings({ MODEL_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k', OPENAI_API_KEY: 'kept for something else', MODEL: 'claude-haiku-4-5' })).toEqual([]);
  });

  it('parses the model time limits with their defaults', () => {
    const defaults = config({});
    expect([defaults.MODEL_TIMEOUT_SECONDS, defaults.MODEL_MAX_ATTEMPTS, defaults.MODEL_TOTAL_TIMEOUT_SECONDS]).toEqual([120, 5, 300]);
    expect(parseConfig({ MODEL_MAX_ATTEMPTS: '0' }).ok).toBe(false);
  });

  it('bounds a run at 50 steps by default (R21), and refuses a limit below one step', () => {
    expect(config({}).RUN_MAX_STEPS).toBe(50);
    expect(config({ RUN_MAX_STEPS: '200' }).RUN_MAX_STEPS).toBe(200);
    expect(parseConfig({ RUN_MAX_STEPS: '0' }).ok).toBe(false);
    expect(parseConfig({ RUN_MAX_STEPS: '2.5' }).ok).toBe(false);
  });

  it('warns when /metrics is public: on PORT or on a METRICS_HOST off loopback, without METRICS_TOKEN', () => {
    const token = { METRICS_TOKEN: '0123456789abcdef' };
    expect(metricsWarnings(config({}))).toEqual([
      '/metrics is served on PORT (3000, every address) without METRICS_TOKEN: whoever reaches it reads the model spend, session and error counts (and the process metrics); set METRICS_PORT (bound to METRICS_HOST, 127.0.0.1 unless set) or METRICS_TOKEN',
    ]);
    expect(metricsWarnings(config(token))).toEqual([]);
    expect(metricsWarnings(config({ METRICS_PORT: '9464' }))).toEqual([]);
    expect(config({ METRICS_PORT: '9464' }).METRICS_HOST).toBe('127.0.0.1');
    expect(metricsWarnings(config({ METRICS_PORT: '9464', METRICS_HOST: '::1' }))).toEqual([]);
    expect(metricsWarnings(config({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }))).toEqual([
      '/metrics is served on METRICS_PORT (9464) at METRICS_HOST=0.0.0.0 without METRICS_TOKEN: whoever reaches it reads the model spend, session and error counts (and the process metrics); set METRICS_TOKEN, or keep METRICS_HOST on a network only the scraper reaches',
    ]);
    expect(metricsWarnings(config({ METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5', ...token }))).toEqual([]);
    expect(parseConfig({ METRICS_HOST: 'metrics.example.com' })).toMatchObject({ ok: false, errors: [expect.stringMatching(/^config: METRICS_HOST must be an IP address/)] });
  });

  it('warns when the model endpoint is http:// off loopback, where the key crosses the network in clear', () => {
    const warnings = (env: Record<string, string>) => configWarnings(config(env), { service: false });
    expect(warnings({ OPENAI_BASE_URL: 'http://gateway.internal:4000/v1' })).toEqual([
      'OPENAI_BASE_URL is http:// to gateway.internal:4000, not a loopback address: OPENAI_API_KEY and every prompt cross the network unencrypted; use https:// (or a proxy on this machine)',
    ]);
    expect(warnings({ MODEL_PROVIDER: 'anthropic', ANTHROPIC_BASE_URL: 'http://10.1.2.3:8080' })).toEqual([
      'ANTHROPIC_BASE_URL is http:// to 10.1.2.3:8080, not a loopback address: ANTHROPIC_API_KEY and every prompt cross the network unencrypted; use https:// (or a proxy on this machine)',
    ]);
    for (const quiet of ['http://127.0.0.1:8080/v1', 'http://localhost:11434/v1', 'http://[::1]:8080/v1', 'https://api.example.com/v1', 'http://127.9.9.9/v1']) expect(warnings({ OPENAI_BASE_URL: quiet })).toEqual([]);
    // The endpoint that is used is the one judged.
    expect(warnings({ MODEL_PROVIDER: 'anthropic', ANTHROPIC_BASE_URL: 'https://gw.example.com', OPENAI_BASE_URL: 'http://gateway.internal/v1' }).some((line) => line.includes('unencrypted'))).toBe(false);
    expect(warnings({ OPENAI_BASE_URL: 'https://gw.example.com/v1', ANTHROPIC_BASE_URL: 'http://10.1.2.3' }).some((line) => line.includes('unencrypted'))).toBe(false);
    expect(isLoopbackHost('127.0.0.1.example.com')).toBe(false);
    expect(isLoopbackHost('1127.0.0.1')).toBe(false);
    expect(isLoopbackHost('localhost.example.com')).toBe(false);
  });

  it('warns once when no spend cap is set, naming both and the step limit, and not when either is set', () => {
    expect(spendWarnings(config({}))).toEqual([
      'no spend cap is set (SESSION_BUDGET_USD, CHANNEL_DAILY_BUDGET_USD): only the step limit (RUN_MAX_STEPS=50) bounds a run, and nothing bounds what a session or a channel spends; set one of them to cap it (docs/configuration.md)',
    ]);
    expect(spendWarnings(config({ SESSION_BUDGET_USD: '5' }))).toEqual([]);
    expect(spendWarnings(config({ CHANNEL_DAILY_BUDGET_USD: '20' }))).toEqual([]);
  });
});
