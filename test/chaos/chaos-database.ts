// Read-only looks at the chaos run's database, in plain SQL over its own connection (independent
// of the generated Prisma client, which other work may be changing): is everything quiet yet, and
// what was stored.
import pg from 'pg';

/** What still moves; all zero (and `awaitingDelivery` zero or null) once the run has settled. */
export interface QuietState {
  queuedSteers: number;
  /** Outbox items pending or being sent. */
  outboxOpen: number;
  /** Leases with an owner (live, or expired and not yet taken over). */
  leasesHeld: number;
  /** Sessions whose context does not end in a final answer. */
  unsettledSessions: number;
  /** Answers and notes marked as not yet handed to the adapter; null before that column exists. */
  awaitingDelivery: number | null;
}

/** A final answer stored in context_messages. */
export interface StoredAnswer {
  sessionId: string;
  segmentId: string;
  seq: number;
  text: string;
}

/** A stored steer message. */
export interface StoredSteer {
  sessionId: string;
  platformMessageKey: string;
  status: string;
}

/** The database of a chaos run. */
export class ChaosDatabase {
  private constructor(private readonly client: pg.Client) {}

  static async open(url: string): Promise<ChaosDatabase> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return new ChaosDatabase(client);
  }

  async quiet(): Promise<QuietState> {
    // One connection: the queries run one after the other.
    const queued = await this.count(`SELECT count(*) AS n FROM steer_messages WHERE status = 'queued'`);
    const outbox = await this.count(`SELECT count(*) AS n FROM outbox WHERE status IN ('pending', 'sending')`);
    const leases = await this.count(`SELECT count(*) AS n FROM session_leases WHERE NOT released`);
    const unsettled = await this.count(`
        SELECT count(*) AS n FROM sessions s
        LEFT JOIN LATERAL (
          SELECT m.role, coalesce(cardinality(m.tool_call_ids), 0) AS calls FROM context_messages m
          WHERE m.segment_id = s.current_segment_id AND NOT m.is_init AND NOT m.is_marker
          ORDER BY m.seq DESC LIMIT 1) last ON true
        WHERE last.role IS DISTINCT FROM 'assistant' OR last.calls > 0`);
    return { queuedSteers: queued, outboxOpen: outbox, leasesHeld: leases, unsettledSessions: unsettled, awaitingDelivery: await this.awaitingDelivery() };
  }

  /**
   * Final answers: assistant messages without tool calls, not init, and not a copy carried over by
   * a reset (those follow the init messages of a later segment; their originals are counted).
   */
  async answers(): Promise<StoredAnswer[]> {
    const result = await this.client.query<{ session_id: string; segment_id: string; seq: number; content: string }>(`
      SELECT g.session_id, m.segment_id, m.seq, m.content FROM context_messages m JOIN segments g ON g.id = m.segment_id
      WHERE m.role = 'assistant' AND NOT m.is_init AND coalesce(cardinality(m.tool_call_ids), 0) = 0
        AND m.seq >= g.carried_messages + (SELECT count(*) FROM context_messages i WHERE i.segment_id = m.segment_id AND i.is_init)
      ORDER BY m.id`);
    return result.rows.map((row) => ({ sessionId: row.session_id, segmentId: row.segment_id, seq: row.seq, text: messageText(row.content) }));
  }

  async steers(): Promise<StoredSteer[]> {
    const result = await this.client.query<{ session_id: string; platform_message_key: string; status: string }>(
      'SELECT session_id, platform_message_key, status FROM steer_messages ORDER BY id');
    return result.rows.map((row) => ({ sessionId: row.session_id, platformMessageKey: row.platform_message_key, status: row.status }));
  }

  /** Session ids by "<channel>:<thread ts>". */
  async sessionsByThread(): Promise<Map<string, string>> {
    const result = await this.client.query<{ id: string; channel_id: string; thread_key: string }>(`SELECT id, channel_id, thread_key FROM sessions WHERE platform = 'slack'`);
    return new Map(result.rows.map((row) => [`${row.channel_id}:${row.thread_key}`, row.id]));
  }

  /** Outbox items by status. */
  async outboxStatuses(): Promise<Record<string, number>> {
    const result = await this.client.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM outbox GROUP BY status');
    return Object.fromEntries(result.rows.map((row) => [row.status, Number(row.n)]));
  }

  /** Failed outbox items with their errors (for the report). */
  async failedOutboxItems(): Promise<Array<{ key: string; error: string | null }>> {
    const result = await this.client.query<{ idempotency_key: string; last_error: string | null }>(`SELECT idempotency_key, last_error FROM outbox WHERE status = 'failed' ORDER BY id`);
    return result.rows.map((row) => ({ key: row.idempotency_key, error: row.last_error }));
  }

  /** Context resets that happened (segments after the first). */
  async resets(): Promise<number> {
    return this.count('SELECT count(*) AS n FROM segments WHERE ordinal > 1');
  }

  /** Drops every connection of the replicas to this database (what a failover or a proxy restart does). */
  async dropConnections(): Promise<number> {
    const result = await this.client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    return result.rowCount ?? 0;
  }

  /** Model calls that ended in an error, as recorded by the replicas. */
  async modelCallErrors(): Promise<number> {
    return this.count(`SELECT count(*) AS n FROM model_calls WHERE error IS NOT NULL`);
  }

  async close(): Promise<void> {
    await this.client.end();
  }

  private async awaitingDelivery(): Promise<number | null> {
    const columns = await this.client.query<{ table_name: string }>(`
      SELECT table_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = 'awaiting_delivery'`);
    if (columns.rows.length === 0) return null;
    let total = 0;
    for (const { table_name: table } of columns.rows) total += await this.count(`SELECT count(*) AS n FROM "${table}" WHERE awaiting_delivery`);
    return total;
  }

  private async count(sql: string): Promise<number> {
    const result = await this.client.query<{ n: string }>(sql);
    return Number(result.rows[0]?.n ?? 0);
  }
}

/** The text of a stored message (JSON of the chat message). */
function messageText(content: string): string {
  try {
    const message = JSON.parse(content) as { content?: unknown };
    return typeof message.content === 'string' ? message.content : '';
  } catch {
    return '';
  }
}
