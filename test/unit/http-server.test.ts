// The service's HTTP server as a client (or a load balancer in front of it) sees it.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpServer } from '../../src/http-server.js';
import { createLogger } from '../../src/log.js';

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function started(): Promise<string> {
  const server = new HttpServer(createLogger('silent', { write: () => undefined }));
  servers.push(server);
  return `http://127.0.0.1:${await server.listen(0, { host: '127.0.0.1' })}`;
}

function get(url: string, agent: Agent): Promise<{ status: number; keepAlive: string | string[] | undefined; socket: unknown }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { agent }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, keepAlive: response.headers['keep-alive'], socket: sent.socket }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('HttpServer', () => {
  it('keeps an idle connection open longer than a load balancer does (announced, and kept past Node’s 5 s default)', async () => {
    const url = await started();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(`${url}/healthz`, agent);
      expect(first.status).toBe(200);
      // Longer than the 60 s idle timeout of the common load balancers, so they close first.
      expect(first.keepAlive).toBe('timeout=65');
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      const second = await get(`${url}/healthz`, agent);
      expect(second.status).toBe(200);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  }, 15_000);

  it('answers an unknown route 404 with a JSON error naming it', async () => {
    const url = await started();
    const agent = new Agent();
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = request(`${url}/nope?x=1`, { agent, method: 'POST' }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      sent.on('error', reject);
      sent.end();
    });
    expect(answer).toEqual({ status: 404, body: JSON.stringify({ error: 'no route for POST /nope' }) });
  });
});
