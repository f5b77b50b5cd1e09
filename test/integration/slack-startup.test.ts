// What `npm start` says when Slack cannot be used at start-up: a token Slack refuses names
// SLACK_BOT_TOKEN; a Slack that cannot be reached says so (the token is not to blame), one line each.
// Not on test/support/slack-rig.ts: the rig starts the adapter in this process, while these tests
// need `npm start`'s own process, its exit code and its stderr.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlackApi } from '../fakes/fake-slack-api.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startScript } from '../support/processes.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

const slackEnv = (apiUrl: string) => ({
  DATABASE_URL: database.url, PORT: '0', LOG_LEVEL: 'silent', OPENAI_API_KEY: 'k', MODEL: 'test-model', TOOLS: 'memory',
  SLACK_BOT_TOKEN: 'xoxb-secret-token', SLACK_SIGNING_SECRET: 'signing', SLACK_API_URL: apiUrl,
});

/** A port nothing listens on (bound once, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('Slack start-up', () => {
  it('says Slack is unreachable when nothing answers at SLACK_API_URL, and that it refused the token only when it did', async () => {
    const port = await closedPort();
    const child = startScript('src/main.ts', slackEnv(`http://127.0.0.1:${port}/api/`));
    expect((await child.exited).code).toBe(1);
    expect(child.stderr()).toBe(`Slack is unreachable: connect ECONNREFUSED 127.0.0.1:${port} (check the network and SLACK_API_URL)\n`);
    // …while a Slack that answers and refuses the token says so.
    const slack = await startFakeSlackApi();
    try {
      slack.script('auth.test', { error: 'invalid_auth' });
      const refused = startScript('src/main.ts', slackEnv(slack.apiUrl));
      expect((await refused.exited).code).toBe(1);
      expect(refused.stderr()).toBe('Slack refused SLACK_BOT_TOKEN: An API error occurred: invalid_auth\n');
    } finally {
      await slack.close();
    }
  }, 120_000);
});
