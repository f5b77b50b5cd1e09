// The chaos test, long form: `npx tsx scripts/chaos.ts [--sessions N --steers N --minutes M]`
// (also --replicas N, --seed N, --kill-every-ms MIN-MAX, --settle-seconds N, --quiet). Same code as
// the CI test (test/chaos/); needs Postgres like the tests do (TEST_DATABASE_URL, default
// postgresql://root@127.0.0.1:5432/test). Exits 0 when every promise held, 1 otherwise.
import { parseArgs } from 'node:util';
import { runChaos } from '../test/chaos/chaos-run.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '30' },
    steers: { type: 'string', default: '200' },
    minutes: { type: 'string', default: '3' },
    replicas: { type: 'string', default: '3' },
    seed: { type: 'string' },
    'kill-every-ms': { type: 'string', default: '2500-3500' },
    'settle-seconds': { type: 'string', default: '180' },
    quiet: { type: 'boolean', default: false },
  },
});

function positive(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number (got ${text})`);
  return value;
}

const [killMin, killMax] = (values['kill-every-ms'] ?? '').split('-').map((part) => positive('kill-every-ms', part));
const options = {
  replicas: Math.round(positive('replicas', values.replicas)),
  sessions: Math.round(positive('sessions', values.sessions)),
  steers: Math.round(positive('steers', values.steers)),
  trafficMs: Math.round(positive('minutes', values.minutes) * 60_000),
  killEveryMs: [killMin ?? 2_500, killMax ?? killMin ?? 3_500] as [number, number],
  settleTimeoutMs: positive('settle-seconds', values['settle-seconds']) * 1000,
  leaseTtlSeconds: 2,
  ...(values.seed !== undefined ? { seed: Math.round(positive('seed', values.seed)) } : {}),
};

// The test support builds a migrated template database per run id, and clones it per run.
process.env['HIPPO_TEST_RUN'] ??= `chaos_${process.pid}`;
const { setup } = await import('../test/support/global-setup.js');
const { createTestDatabase } = await import('../test/support/database.js');
const teardown = await setup();
const database = await createTestDatabase();
const say = (line: string) => {
  if (!values.quiet) process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};
let exitCode = 1;
try {
  say(`${options.replicas} replicas · ${options.sessions} sessions · ${options.steers} steers over ${options.trafficMs / 60_000} min · a kill every ${options.killEveryMs.join('–')} ms`);
  const run = await runChaos({ databaseUrl: database.url, ...options, say });
  process.stdout.write(`${run.summary}\n`);
  exitCode = run.ok ? 0 : 1;
} finally {
  await database.drop();
  await teardown();
}
process.exit(exitCode);
