// What the HTTP fakes share (the model fakes, the Slack Web API, Discord's REST half): a server on
// 127.0.0.1 that closes at once (its keep-alive sockets destroyed), bodies read whole, JSON
// replies, responses held open until a delay passes or the client leaves, waiters woken by each
// request, and text cut into stream chunks.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeHttpServer {
  readonly server: Server;
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** Stops listening and destroys every open connection. */
  close(): Promise<void>;
}

/**
 * Serves `serve` on a random port of 127.0.0.1. A request whose handler throws gets `fail`'s
 * answer, or its connection destroyed when the response had started.
 */
export async function listenFake(
  serve: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
  fail: (response: ServerResponse, error: unknown) => void,
): Promise<FakeHttpServer> {
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    void serve(request, response).catch((error: unknown) => {
      if (!response.headersSent) fail(response, error);
      else response.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** The whole request body, as bytes. */
export function readBodyBytes(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => resolve(Buffer.concat(parts)));
    request.on('error', reject);
  });
}

/** The whole request body, as UTF-8 text. */
export async function readBody(request: IncomingMessage): Promise<string> {
  return (await readBodyBytes(request)).toString('utf8');
}

export function sendJson(response: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(value));
}

/** Responses a fake keeps open on purpose (a delay, a hang), all let go when it closes. */
export class HeldResponses {
  private readonly releases = new Set<() => void>();

  /** Resolves after `ms` (or never, when absent), or as soon as the client leaves or `releaseAll`. */
  hold(response: ServerResponse, ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.releases.delete(release);
        response.off('close', release);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(release, ms);
      this.releases.add(release);
      response.on('close', release);
    });
  }

  releaseAll(): void {
    for (const release of [...this.releases]) release();
  }
}

/** Tests waiting for requests: each waits until its `find` gives a value, woken by `wake`. */
export class RequestWaiters {
  private readonly waiters = new Set<() => void>();

  /** `name` and `received` make the timeout's message: "<name>: timed out … (got N requests)". */
  constructor(
    private readonly name: string,
    private readonly received: () => number,
  ) {}

  /** Call after each recorded request. */
  wake(): void {
    for (const wake of [...this.waiters]) wake();
  }

  until<T>(find: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found === undefined) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${this.name}: timed out after ${timeoutMs} ms waiting for ${what} (got ${this.received()} requests)`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}

/** Cuts text into chunks of `size` code points, so a surrogate pair never straddles two chunks. */
export function split(text: string, size: number): string[] {
  const points = Array.from(text);
  const pieces: string[] = [];
  for (let start = 0; start < points.length; start += size) pieces.push(points.slice(start, start + size).join(''));
  return pieces;
}
