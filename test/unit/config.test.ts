import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configKeys, configWarnings, missingModelSettings, parseConfig } from '../../src/config.js';

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

  it('names what to set when the model settings are missing', () => {
    const result = parseConfig({});
    if (!result.ok) throw new Error('unexpected');
    expect(missingModelSettings(result.config).join('\n')).toMatch(/OPENAI_API_KEY[\s\S]*MODEL/);
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

  it('keeps vendor libraries out of src/core', async () => {
    const { execSync } = await import('node:child_process');
    const hits = execSync(
      "grep -rlE \"from ['\\\"](@slack/bolt|discord\\.js|openai|@prisma/client|pg|@electric-sql/pglite)['\\\"/]|generated/\" src/core || true",
      { encoding: 'utf8' },
    );
    expect(hits.trim()).toBe('');
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
    expect(configWarnings(config({ SLACK_SIGNING_SECRET: 's' }), { service: true })).toEqual(['SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set without SLACK_BOT_TOKEN: Slack is not started']);
    expect(configWarnings(config({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1' }), { service: true })).toEqual([]);
  });

  it('parses the model time limits with their defaults', () => {
    const defaults = config({});
    expect([defaults.MODEL_TIMEOUT_SECONDS, defaults.MODEL_MAX_ATTEMPTS, defaults.MODEL_TOTAL_TIMEOUT_SECONDS]).toEqual([120, 5, 300]);
    expect(parseConfig({ MODEL_MAX_ATTEMPTS: '0' }).ok).toBe(false);
  });
});
