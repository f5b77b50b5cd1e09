// The service's HTTP server: health, readiness, metrics and the platform webhooks mounted by
// adapters (Slack's /slack/events). One port (PORT) for everything, except /metrics when
// METRICS_PORT gives it a server of its own.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from './core/errors.js';
import type { Logger } from './log.js';

export type RouteHandler = (request: IncomingMessage, response: ServerResponse) => void | Promise<void>;

/** A check's answer when it has more to say than yes or no (shown as `status` in /readyz). */
export interface ReadinessStatus {
  ready: boolean;
  status: string;
}

/** Something /readyz asks; all must answer ready for a 200. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<boolean | ReadinessStatus>;
}

/** How long an idle keep-alive connection stays open (announced as `Keep-Alive: timeout=65`). */
const idleConnectionMs = 65_000;

export class HttpServer {
  private readonly routes = new Map<string, RouteHandler>();
  private readonly checks: ReadinessCheck[] = [];
  private readonly server: Server;

  /** `probes: false` leaves out /healthz and /readyz (a server for /metrics only). */
  constructor(private readonly log: Logger, options: { probes?: boolean } = {}) {
    if (options.probes !== false) {
      this.route('GET', '/healthz', (_request, response) => sendJson(response, 200, { status: 'ok' }));
      this.route('GET', '/readyz', (_request, response) => this.ready(response));
    }
    this.server = createServer((request, response) => this.handle(request, response));
    // An idle connection stays open longer than a load balancer's idle timeout (60 s on the common
    // ones), so the balancer never sends Slack's next event down a connection this server is just
    // closing (a reset, a 502, a retried event). Node's default is 5 s.
    this.server.keepAliveTimeout = idleConnectionMs;
    this.server.headersTimeout = idleConnectionMs + 1_000;
  }

  /** Adds a route; `path` is matched exactly (without the query string). */
  route(method: string, path: string, handler: RouteHandler): void {
    this.routes.set(`${method} ${path}`, handler);
  }

  /** Adds a readiness check (database reachable, adapters connected, …). */
  addReadinessCheck(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  /**
   * Starts listening; resolves with the bound port. A port that is taken or needs privileges
   * rejects with a ConfigError naming `setting` (the variable that chose the port).
   */
  async listen(port: number, options: { host?: string; setting?: string } = {}): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', (error) => reject(listenError(error, port, options.setting ?? 'PORT')));
      this.server.listen(port, options.host ?? '0.0.0.0', () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }

  private async ready(response: ServerResponse): Promise<void> {
    const results: Record<string, boolean | string> = {};
    let ok = true;
    for (const { name, check } of this.checks) {
      const answer = await check().catch(() => false);
      results[name] = typeof answer === 'boolean' ? answer : answer.status;
      ok &&= typeof answer === 'boolean' ? answer : answer.ready;
    }
    sendJson(response, ok ? 200 : 503, { status: ok ? 'ready' : 'not-ready', checks: results });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const handler = this.routes.get(`${request.method ?? 'GET'} ${path}`);
    if (!handler) {
      sendJson(response, 404, { error: `no route for ${request.method} ${path}` });
      return;
    }
    Promise.resolve(handler(request, response)).catch((error: unknown) => {
      this.log.error({ err: error, path }, 'http-handler-failed');
      if (!response.headersSent) sendJson(response, 500, { error: 'internal error' });
      else response.end();
    });
  }
}

/** Node's bare EADDRINUSE / EACCES as one line saying which setting to change. */
function listenError(error: Error, port: number, setting: string): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new ConfigError(`config: ${setting} ${port} is already in use by another program: stop it or set ${setting} to a free port`);
  if (code === 'EACCES') return new ConfigError(`config: ${setting} ${port} needs privileges this process does not have (ports below 1024): set ${setting} to 1024 or above`);
  return error;
}

/** Writes a JSON response. */
export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
