// Cross-replica wake-ups. On Postgres: NOTIFY on a channel every replica LISTENs to, over one
// dedicated connection that reconnects by itself. On PGlite (one process): in-process delivery.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Wakeups } from '../../core/store.js';
import type { Logger } from '../../log.js';

const channel = 'hippo_session_work';

/** In-process wake-ups (PGlite, or tests of a single replica). */
export class LocalWakeups implements Wakeups {
  private readonly emitter = new EventEmitter();

  async notify(sessionId: string): Promise<void> {
    this.emitter.emit('wake', sessionId);
  }

  subscribe(handler: (sessionId: string) => void): () => void {
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
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  /** Connects the listening connection; missed notifications are covered by the lease sweeper. */
  static async start(pool: pg.Pool, url: string, log: Logger): Promise<PostgresWakeups> {
    const wakeups = new PostgresWakeups(pool, url, log);
    await wakeups.connect();
    return wakeups;
  }

  async notify(sessionId: string): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [channel, sessionId]);
  }

  subscribe(handler: (sessionId: string) => void): () => void {
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
      if (message.channel === channel && message.payload) this.emitter.emit('wake', message.payload);
    });
    client.on('error', (error) => {
      this.log.warn({ err: error.message }, 'wakeups-connection-lost');
      this.reconnectLater();
    });
    client.on('end', () => this.reconnectLater());
    await client.connect();
    await client.query(`LISTEN ${channel}`);
    this.listener = client;
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
