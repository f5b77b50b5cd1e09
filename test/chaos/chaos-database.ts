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

/** A stored context message, as the memory checks read it. */
export interface SegmentMessage {
  role: string;
  text: string;
  isInit: boolean;
  isMarker: boolean;
  /** A marker's summarizer run status. */
  runStatus: string | null;
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

  /**
   * Pairs of summarizer runs of one segment that both succeeded and whose [started_at,
   * finished_at] overlap (R3: one summarizer per segment at a time).
   */
  async overlappingSummarizers(): Promise<Array<{ sessionId: string; segmentId: string; runs: [string, string] }>> {
    const result = await this.client.query<{ session_id: string; segment_id: string; first: string; second: string }>(`
      SELECT a.session_id, a.segment_id, a.id AS first, b.id AS second FROM memory_runs a
      JOIN memory_runs b ON b.segment_id = a.segment_id AND b.id > a.id
      WHERE a.role = 'summarizer' AND b.role = 'summarizer' AND a.status = 'succeeded' AND b.status = 'succeeded'
        AND a.started_at < b.finished_at AND b.started_at < a.finished_at`);
    return result.rows.map((row) => ({ sessionId: row.session_id, segmentId: row.segment_id, runs: [row.first, row.second] }));
  }

  /** Memory runs by "<role> <status>" (a settled run has none 'running': a dead replica's runs are failed by the next holder). */
  async memoryRunStatuses(): Promise<Record<string, number>> {
    const result = await this.client.query<{ status: string; n: string }>(`SELECT role || ' ' || status AS status, count(*) AS n FROM memory_runs GROUP BY role, status`);
    return Object.fromEntries(result.rows.map((row) => [row.status, Number(row.n)]));
  }

  /**
   * Per session: its segments, and the segments that asked for a reset — a decider said reset, or
   * a decider's outcome is unknown (killed or unrecorded after it may have asked).
   */
  async segmentsAndResetRequests(): Promise<Array<{ sessionId: string; segments: number; deciderRequests: number }>> {
    const result = await this.client.query<{ session_id: string; segments: string; requests: string }>(`
      SELECT g.session_id, count(*) AS segments,
        count(*) FILTER (WHERE EXISTS (SELECT 1 FROM memory_runs r WHERE r.segment_id = g.id AND r.role = 'decider'
          AND (r.decision = 'reset' OR r.status <> 'succeeded'))) AS requests
      FROM segments g GROUP BY g.session_id`);
    return result.rows.map((row) => ({ sessionId: row.session_id, segments: Number(row.segments), deciderRequests: Number(row.requests) }));
  }

  /** Every segment's messages in order, with the final status of each marker's summarizer run. */
  async segmentMessages(): Promise<Array<{ sessionId: string; ordinal: number; carried: number; messages: SegmentMessage[] }>> {
    const segments = await this.client.query<{ id: string; session_id: string; ordinal: number; carried_messages: number }>(
      'SELECT id, session_id, ordinal, carried_messages FROM segments ORDER BY session_id, ordinal');
    const messages = await this.client.query<{ segment_id: string; role: string; content: string; is_init: boolean; is_marker: boolean; status: string | null }>(`
      SELECT m.segment_id, m.role, m.content, m.is_init, m.is_marker, r.status FROM context_messages m
      LEFT JOIN memory_runs r ON r.id = m.memory_run_id ORDER BY m.segment_id, m.seq`);
    const bySegment = new Map<string, SegmentMessage[]>();
    for (const row of messages.rows) {
      const list = bySegment.get(row.segment_id) ?? [];
      list.push({ role: row.role, text: messageText(row.content), isInit: row.is_init, isMarker: row.is_marker, runStatus: row.status });
      bySegment.set(row.segment_id, list);
    }
    return segments.rows.map((row) => ({ sessionId: row.session_id, ordinal: row.ordinal, carried: row.carried_messages, messages: bySegment.get(row.id) ?? [] }));
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
