// NODE_USE_ENV_PROXY as shipped: the agent built from the service's configuration sends its model
// calls through the environment's HTTP proxy when the switch is on (src/config.ts → build-agent.ts
// → the model client's fetch), and straight to the endpoint when it is off; so does the Slack app's
// Web API client (src/adapters/slack/app.ts → the whole-answer fetch).
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { webApi } from '@slack/bolt';
import { slackClientOptions } from '../../src/adapters/slack/app.js';
import { boltLogger } from '../../src/adapters/slack/bolt-logger.js';
import { buildAgent } from '../../src/build-agent.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

afterEach(() => {
  vi.unstubAllEnvs();
});

// One proxy for the file: the proxied connections are kept (keep-alive), per process, as the
// environment named them when the first call needed them.
let proxy: Awaited<ReturnType<typeof startProxy>>;
beforeAll(async () => {
  proxy = await startProxy();
});
afterAll(() => proxy.close());

/** A CONNECT proxy on loopback that records each tunnel's target and passes the bytes through. */
async function startProxy(): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
  const tunnels: string[] = [];
  const proxy = createServer();
  proxy.on('connect', (request: IncomingMessage, client: Duplex) => {
    tunnels.push(request.url ?? '');
    const [host, port] = (request.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    tunnels,
    close: async () => {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

describe('model calls behind an outbound proxy', () => {
  it('go through HTTP_PROXY when NODE_USE_ENV_PROXY=1, and straight to the endpoint without it', async () => {
    proxy.tunnels.length = 0;
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-proxy-'));
    bed.onCleanup(() => rm(dataDir, { recursive: true, force: true }));
    vi.stubEnv('HTTP_PROXY', proxy.url);
    vi.stubEnv('NO_PROXY', '');
    for (const [switchValue, tunnels] of [['0', 0], ['1', 1]] as const) {
      const parsed = parseConfig({ MODEL: 'fake-model', OPENAI_BASE_URL: bed.model.url, OPENAI_API_KEY: 'test-key', TOOLS: 'memory', DATA_DIR: dataDir, NODE_USE_ENV_PROXY: switchValue });
      if (!parsed.ok) throw new Error(parsed.errors.join('; '));
      const built = await buildAgent({ config: parsed.config, database: bed.database, log: createLogger('silent'), environment: {} });
      try {
        expect(await built.modelHealth.checkNow()).toBe('ok');
        expect(proxy.tunnels).toHaveLength(tunnels);
      } finally {
        await built.agent.stop(1_000);
        await built.close();
      }
    }
    expect(proxy.tunnels).toEqual([new URL(bed.model.url).host]);
  });
});

describe('Slack Web API calls behind an outbound proxy', () => {
  it('go through HTTP_PROXY when NODE_USE_ENV_PROXY=1, and straight to Slack without it', async () => {
    proxy.tunnels.length = 0;
    const calls: string[] = [];
    const slack = createServer((request, response) => {
      calls.push(request.url ?? '');
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, channel: 'C1', ts: '1.2' }));
    });
    await new Promise<void>((resolve) => slack.listen(0, '127.0.0.1', resolve));
    bed.onCleanup(() => new Promise<void>((resolve) => slack.close(() => resolve())));
    const apiUrl = `http://127.0.0.1:${(slack.address() as AddressInfo).port}/api/`;
    vi.stubEnv('HTTP_PROXY', proxy.url);
    vi.stubEnv('NO_PROXY', '');
    for (const [switchValue, tunnels] of [['0', 0], ['1', 1]] as const) {
      const parsed = parseConfig({ SLACK_BOT_TOKEN: 'xoxb-test', SLACK_SIGNING_SECRET: 'secret', SLACK_API_URL: apiUrl, OPENAI_API_KEY: 'k', MODEL: 'm', NODE_USE_ENV_PROXY: switchValue });
      if (!parsed.ok) throw new Error(parsed.errors.join('; '));
      const client = new webApi.WebClient('xoxb-test', slackClientOptions(parsed.config, boltLogger(createLogger('silent')), 0));
      expect(await client.chat.postMessage({ channel: 'C1', text: 'hi' })).toMatchObject({ ok: true });
      expect(proxy.tunnels).toHaveLength(tunnels);
    }
    expect(calls).toEqual(['/api/chat.postMessage', '/api/chat.postMessage']);
  });
});
