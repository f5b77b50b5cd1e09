// The embedded Postgres a test run starts when no server is configured (test/support/postgres-server.ts).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/processes.js';

const run = promisify(execFile);

describe('the embedded test Postgres', () => {
  it('starts, answers, stops, and leaves the process exit code alone (a failed run stays failed)', async () => {
    const script = `
      import pg from 'pg';
      import { startEmbeddedPostgres } from './test/support/postgres-server.ts';
      const server = await startEmbeddedPostgres();
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      console.log((await client.query('SHOW server_version')).rows[0].server_version);
      await client.end();
      await server.stop();
      process.exitCode = 3; // what vitest sets when a test failed
    `;
    const outcome = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: repoRoot, timeout: 60_000 }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code?: number; stdout?: string }) => ({ code: error.code, stdout: error.stdout ?? '' }),
    );
    expect(outcome.stdout).toMatch(/^15\./);
    expect(outcome.code).toBe(3);
  }, 60_000);
});
