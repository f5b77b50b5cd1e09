// The test suite's own promise: unit tests run on a machine without any database server.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/processes.js';

const run = promisify(execFile);

describe('the unit project', () => {
  it('runs without touching Postgres (no global setup reaches for a database)', async () => {
    // A server that cannot exist: any attempt to connect (or to start one) fails the run.
    const env = { ...process.env, TEST_DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none' };
    const { stdout } = await run(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--project', 'unit', 'test/unit/prompts.test.ts'], {
      cwd: repoRoot,
      env,
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^\d+ passed, 0 failed$/m);
    expect(stdout).not.toMatch(/TEST_DATABASE_URL/);
  }, 60_000);
});
