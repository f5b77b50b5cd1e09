// The shared set-up of agent test files: one isolated Postgres database and one fake model
// server per file; harnesses made in a test are closed after it, and the model is reset.
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, type AgentHarness, type HarnessOptions } from './agent-harness.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestBed {
  readonly database: TestDatabase;
  readonly model: FakeModelServer;
  /** A harness on this file's database and model, closed after the test. */
  harness(options?: Omit<HarnessOptions, 'database' | 'model'>): Promise<AgentHarness>;
  /** Runs `close` after the current test. */
  onCleanup(close: () => Promise<void>): void;
}

/** Registers the hooks; use the returned bed inside tests. */
export function useTestBed(): TestBed {
  let database: TestDatabase | undefined;
  let model: FakeModelServer | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    database = await createTestDatabase();
    model = await startFakeModelServer();
  });
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close();
    model?.reset();
  });
  afterAll(async () => {
    await model?.close();
    await database?.drop();
  });
  const bed: TestBed = {
    get database() {
      if (!database) throw new Error('the test bed is not ready (use it inside tests)');
      return database;
    },
    get model() {
      if (!model) throw new Error('the test bed is not ready (use it inside tests)');
      return model;
    },
    async harness(options = {}) {
      const harness = await createAgentHarness({ database: bed.database, model: bed.model, ...options });
      cleanups.push(() => harness.close());
      return harness;
    },
    onCleanup(close) {
      cleanups.push(close);
    },
  };
  return bed;
}
