import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configKeys, missingModelSettings, parseConfig } from '../../src/config.js';

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
