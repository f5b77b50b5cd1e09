import { defineConfig } from 'vitest/config';

// One id per test run: the global setup and the test workers (which inherit it) agree on the
// name of the migrated template database.
process.env['HIPPO_TEST_RUN'] ??= String(process.pid);

export default defineConfig({
  test: {
    reporters: ['default', './test/support/count-reporter.ts'],
    globalSetup: ['./test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most integration time is waiting (Postgres, child processes, fake servers): more files in
    // parallel than the machine's 2 cores keeps the suite short.
    maxWorkers: 3,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'], exclude: ['test/integration/chaos.test.ts'], sequence: { groupOrder: 0 } },
      },
      // Replicas SIGKILLed under load: alone at the end, so it neither starves nor is starved.
      { extends: true, test: { name: 'chaos', include: ['test/integration/chaos.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
