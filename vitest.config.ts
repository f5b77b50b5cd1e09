import { defineConfig } from 'vitest/config';

// One id per test run: the global setup and the test workers (which inherit it) agree on the
// name of the migrated template database.
process.env['HIPPO_TEST_RUN'] ??= String(process.pid);

// Finds or starts Postgres (an embedded one when none is configured or running) and builds the
// migrated template; shared by the projects that need a database, run once per test run.
const postgresSetup = './test/support/global-setup.ts';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/count-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most integration time is waiting (Postgres, child processes, fake servers): more files in
    // parallel than the machine's 2 cores keeps the suite short.
    maxWorkers: 3,
    projects: [
      // Unit tests need no database: no global setup, so they run on any machine as they are.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: ['test/integration/chaos.test.ts'],
          globalSetup: [postgresSetup],
          sequence: { groupOrder: 0 },
        },
      },
      // Replicas SIGKILLed under load: alone at the end, so it neither starves nor is starved.
      { extends: true, test: { name: 'chaos', include: ['test/integration/chaos.test.ts'], globalSetup: [postgresSetup], sequence: { groupOrder: 1 } } },
    ],
  },
});
