// The gateway half of the fake Discord: a WebSocket server speaking the real protocol (JSON
// encoding, no compression) so the real discord.js client connects to it. HELLO → IDENTIFY →
// READY → GUILD_CREATE, heartbeats answered; tests push dispatches (MESSAGE_CREATE, …) to every
// identified connection. Optionally refuses the privileged Message Content intent with 4014.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

/** Gateway intent bit of Message Content (privileged). */
export const messageContentIntent = 1 << 15;

/** What the gateway sends after IDENTIFY; built by the fake's state. */
export interface GatewayWelcome {
  ready: (sessionId: string) => Record<string, unknown>;
  guilds: () => Array<Record<string, unknown>>;
}

export interface GatewayOptions {
  /** Close with 4014 when IDENTIFY asks for Message Content. */
  disallowMessageContent?: boolean;
}

interface Connection {
  socket: WebSocket;
  sequence: number;
  identified: boolean;
  sessionId: string;
}

/** One IDENTIFY the gateway received. */
export interface IdentifyRecord {
  intents: number;
  token: string;
  at: number;
}

/** The fake gateway; attach it to the fake's HTTP server with `handleUpgrade`. */
export class FakeGateway {
  readonly identifies: IdentifyRecord[] = [];
  /** Close codes the gateway sent. */
  readonly closeCodes: number[] = [];
  private readonly server = new WebSocketServer({ noServer: true });
  private readonly connections = new Set<Connection>();
  private sessions = 0;

  constructor(
    private readonly welcome: GatewayWelcome,
    private readonly options: GatewayOptions = {},
  ) {
    this.server.on('connection', (socket) => this.accept(socket));
  }

  /** Takes over an HTTP upgrade request for the gateway path. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.server.handleUpgrade(request, socket, head, (ws) => this.server.emit('connection', ws, request));
  }

  /** Identified connections right now. */
  get connected(): number {
    return [...this.connections].filter((connection) => connection.identified).length;
  }

  /** Sends a dispatch (op 0) to every identified connection. */
  dispatch(type: string, data: unknown): void {
    for (const connection of this.connections) {
      if (connection.identified) this.send(connection, type, data);
    }
  }

  /** Closes every connection and the server. */
  async close(): Promise<void> {
    for (const connection of this.connections) connection.socket.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: WebSocket): void {
    this.sessions += 1;
    const connection: Connection = { socket, sequence: 0, identified: false, sessionId: `fake-session-${this.sessions}` };
    this.connections.add(connection);
    socket.on('close', () => this.connections.delete(connection));
    socket.on('message', (raw) => this.receive(connection, raw.toString()));
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 41_250 }, s: null, t: null }));
  }

  private receive(connection: Connection, raw: string): void {
    const payload = JSON.parse(raw) as { op: number; d: unknown };
    switch (payload.op) {
      case 1: // heartbeat
        connection.socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
        return;
      case 2: {
        const identify = payload.d as { token: string; intents: number };
        this.identifies.push({ intents: identify.intents, token: identify.token, at: Date.now() });
        if (this.options.disallowMessageContent && (identify.intents & messageContentIntent) !== 0) {
          this.closeCodes.push(4014);
          connection.socket.close(4014, 'Disallowed intent(s).');
          return;
        }
        connection.identified = true;
        this.send(connection, 'READY', this.welcome.ready(connection.sessionId));
        for (const guild of this.welcome.guilds()) this.send(connection, 'GUILD_CREATE', guild);
        return;
      }
      case 6: // resume: nothing was missed in a test
        connection.identified = true;
        this.send(connection, 'RESUMED', null);
        return;
      default:
        return; // presence and voice updates are ignored
    }
  }

  private send(connection: Connection, type: string, data: unknown): void {
    connection.sequence += 1;
    connection.socket.send(JSON.stringify({ op: 0, t: type, s: connection.sequence, d: data }));
  }
}
