// Cross-replica wake-ups. On Postgres: NOTIFY on a channel every replica LISTENs to, over one
// dedicated connection that reconnects by itself. On PGlite (one process): in-process delivery.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { WakeReason, Wakeups } from '../../core/store.js';
import type { Logger } from '../../log.js';
import { isTransientDatabaseError } from './storage-errors.js';

/** The channel every replica LISTENs to (the intake statement notifies on it too). */
export const wakeupChannel = 'hippo_session_work';
const channel = wakeupChannel;
// Payload: the session id for new work, "flags:<session id>" for changed flags, "memory:<session
// id>" for a person's remember / forget, "approval:<session id>" for a decided tool call (R23).
const prefixes = [['flags:', 'flags'], ['memory:', 'memory'], ['approval:', 'approval']] as const;

/** In-process wake-ups (PGlite, or tests of a single replica). */
export class LocalWakeups implements Wakeups {
  private readonly emitter = new EventEmitter();

  async notify(sessionId: string, reason: WakeReason = 'work'): Promise<void> {
    this.emitter.emit('wake', sessionId, reason);
  }

  subscribe(handler: (sessionId: string, reason: WakeReason) => void): () => void {
    this.emitter.on('wake', handler);
    return () => this.emitter.off('wake', handler);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

/** LISTEN/NOTIFY wake-ups shared by every replica on one Postgres. */
export class PostgresWakeups implements Wakeups {
  private readonly emitter = new EventEmitter();
  private listener: pg.Client | undefined;
  /** A connection was lost or failed to start: the next one to listen reports what was missed. */
  private everLost = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  /**
   * Connects the listening connection; missed notifications are covered by the lease sweeper. A
   * connection dropped as the service starts (a failover, a server restart) does not stop the
   * start: it listens again shortly, and the sweeper covers what is notified meanwhile.
   */
  static async start(pool: pg.Pool, url: string, log: Logger): Promise<PostgresWakeups> {
    const wakeups = new PostgresWakeups(pool, url, log);
    await wakeups.connect().catch((error: unknown) => {
      if (!isTransientDatabaseError(error)) throw error;
      log.warn({ err: String(error) }, 'wakeups-connection-lost');
      wakeups.reconnectLater();
    });
    return wakeups;
  }

  async notify(sessionId: string, reason: WakeReason = 'work'): Promise<void> {
    const prefix = prefixes.find(([, named]) => named === reason)?.[0] ?? '';
    await this.pool.query('SELECT pg_notify($1, $2)', [channel, `${prefix}${sessionId}`]);
  }

  subscribe(handler: (sessionId: string, reason: WakeReason) => void): () => void {
    this.emitter.on('wake', handler);
    return () => this.emitter.off('wake', handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.emitter.removeAllListeners();
    await this.listener?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000 });
    client.on('notification', (message) => {
      const payload = message.payload;
      if (message.channel !== channel || !payload) return;
      const [prefix, reason] = prefixes.find(([start]) => payload.startsWith(start)) ?? ['', 'work'];
      this.emitter.emit('wake', payload.slice(prefix.length), reason);
    });
    // Only the connection in use reconnects: one that failed to start or was replaced is done.
    const lost = (error?: Error) => {
      if (client !== this.listener) return;
      this.listener = undefined;
      this.everLost = true;
      if (error) this.log.warn({ err: error.message }, 'wakeups-connection-lost');
      this.reconnectLater();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (error) {
      this.everLost = true;
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    // Whatever was notified while no connection listened is lost: every session is looked at again.
    if (this.everLost) this.emitter.emit('wake', '', 'missed');
  }

  private reconnectLater(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().catch((error: unknown) => {
        this.log.warn({ err: String(error) }, 'wakeups-reconnect-failed');
        this.reconnectLater();
      });
    }, 1_000);
    this.retry.unref();
  }
}
