// The fakes a test of the service as a process talks to (`src/main.ts` started by
// test/support/processes.ts): a test database, the fake model server, and the fake Slack Web API
// with Ada in it. Registers the hooks; use the fakes inside tests. An `afterAll` the file registers
// after this call runs before these close (vitest runs after-hooks last-in first-out), so processes
// it started are gone by then.
import { afterAll, beforeAll } from 'vitest';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface ServiceFakes {
  readonly database: TestDatabase;
  readonly model: FakeModelServer;
  readonly slack: FakeSlackApi;
}

export function useServiceFakes(): ServiceFakes {
  let started: ServiceFakes | undefined;
  beforeAll(async () => {
    const database = await createTestDatabase();
    const model = await startFakeModelServer();
    const slack = await startFakeSlackApi({ threadStatusError: null });
    slack.addUser({ id: 'UADA', displayName: 'Ada' });
    started = { database, model, slack };
  });
  afterAll(async () => {
    await started?.slack.close();
    await started?.model.close();
    await started?.database.drop();
  });
  const ready = (): ServiceFakes => {
    if (!started) throw new Error('the service fakes are not ready (use them inside tests)');
    return started;
  };
  return {
    get database() {
      return ready().database;
    },
    get model() {
      return ready().model;
    },
    get slack() {
      return ready().slack;
    },
  };
}
