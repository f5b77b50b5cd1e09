// NODE_USE_ENV_PROXY as shipped: the agent built from the service's configuration sends its model
// calls through the environment's HTTP proxy when the switch is on (src/config.ts → build-agent.ts
// → the model client's fetch), and straight to the endpoint when it is off.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildAgent } from '../../src/build-agent.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

afterEach(() => {
  vi.unstubAllEnvs();
});

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
    const proxy = await startProxy();
    bed.onCleanup(() => proxy.close());
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
