// A fake Slack Socket Mode endpoint speaking the real protocol over a real WebSocket (the `ws`
// package): the fake Web API's apps.connections.open hands out its ws:// URL; on each connection
// it sends `hello`; tests push `events_api` envelopes, read the client's acks (`{envelope_id}`),
// and send `disconnect` (e.g. reason `refresh_requested`) to make the client reconnect.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** What the client sent back for an envelope. */
export interface SocketAck {
  envelope_id: string;
  payload?: Record<string, unknown>;
  at: number;
}

export interface FakeSocketMode {
  /** The URL apps.connections.open returns (one per call, as Slack's are). */
  nextUrl(): string;
  /** Connections opened so far (closed ones included). */
  readonly connections: number;
  /** Resolves once `count` connections have been opened and greeted. */
  waitForConnections(count: number, timeoutMs?: number): Promise<void>;
  /** Sends an events_api envelope on the newest open connection; returns its envelope id. */
  sendEvent(payload: Record<string, unknown>, options?: { retryAttempt?: number }): string;
  /** Resolves with the client's ack of `envelopeId`. */
  waitForAck(envelopeId: string, timeoutMs?: number): Promise<SocketAck>;
  /** Asks the client to reconnect, as Slack does before recycling a connection. */
  sendDisconnect(reason: 'refresh_requested' | 'warning' | 'link_disabled'): void;
  close(): Promise<void>;
}

/** Starts the fake on 127.0.0.1 on a random port. */
export async function startFakeSocketMode(): Promise<FakeSocketMode> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const open: WebSocket[] = [];
  const acks: SocketAck[] = [];
  const waiters = new Set<() => void>();
  let connections = 0;
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };

  server.on('connection', (socket) => {
    connections += 1;
    open.push(socket);
    socket.on('close', () => open.splice(open.indexOf(socket), 1));
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { envelope_id?: string; payload?: Record<string, unknown> };
      if (typeof message.envelope_id === 'string') {
        acks.push({ envelope_id: message.envelope_id, ...(message.payload ? { payload: message.payload } : {}), at: Date.now() });
        wake();
      }
    });
    socket.send(JSON.stringify({ type: 'hello', num_connections: open.length, debug_info: { host: 'fake-socket-mode', approximate_connection_time: 18060 }, connection_info: { app_id: 'AHIPPO' } }));
    wake();
  });

  const waitUntil = <T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const value = probe();
        if (value === undefined) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`fake socket mode: ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });

  const newest = (): WebSocket => {
    const socket = open.at(-1);
    if (!socket) throw new Error('fake socket mode: no open connection');
    return socket;
  };

  return {
    nextUrl: () => `ws://127.0.0.1:${port}/link/?ticket=${randomUUID()}&app_id=AHIPPO`,
    get connections() {
      return connections;
    },
    waitForConnections: (count, timeoutMs = 10_000) => waitUntil(() => (connections >= count ? true : undefined), timeoutMs, `no ${count} connections`).then(() => undefined),
    sendEvent: (payload, options = {}) => {
      const envelopeId = randomUUID();
      newest().send(JSON.stringify({
        envelope_id: envelopeId, payload, type: 'events_api', accepts_response_payload: false,
        retry_attempt: options.retryAttempt ?? 0, retry_reason: options.retryAttempt ? 'timeout' : '',
      }));
      return envelopeId;
    },
    waitForAck: (envelopeId, timeoutMs = 10_000) => waitUntil(() => acks.find((ack) => ack.envelope_id === envelopeId), timeoutMs, `no ack of ${envelopeId}`),
    sendDisconnect: (reason) => newest().send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'fake-socket-mode' } })),
    close: async () => {
      for (const socket of open) socket.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
