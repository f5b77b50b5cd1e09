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
      if (process.argv.includes('--exit-explicitly')) process.exit(3); // as vitest ends some runs
    `;
    for (const ending of ['--end-naturally', '--exit-explicitly']) {
      const outcome = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, '--', ending], { cwd: repoRoot, timeout: 60_000 }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code, stdout: error.stdout ?? '', stderr: error.stderr ?? '' }),
      );
      expect(outcome.stdout).toMatch(/^15\./);
      expect(outcome.stderr).toBe('');
      expect(outcome.code).toBe(3);
    }
  }, 60_000);
});
