// Slack's side of a chaos run: signed Events API requests to random live replicas, retried the way
// Slack retries (same event, X-Slack-Retry-Num, another replica) when a replica is down, slow
// (3 s) or answers with an error. Every event is delivered until acknowledged, within bounds.
// Slack backs off between retries (1 min, then 5 min); the compressed backoff here keeps that
// shape, because retrying a slow replica's events at once only adds to what makes it slow.
import { signedHeaders } from '../fakes/fake-slack-api.js';
import type { Random } from './random.js';

/** The outcome of one event's delivery. */
export interface EventDelivery {
  eventId: string;
  /** Requests made (1 = acknowledged at once). */
  attempts: number;
  acknowledged: boolean;
  /** Why requests failed, e.g. "ECONNREFUSED", "503", "timeout". */
  failures: string[];
}

/** Options of SlackTraffic. */
export interface SlackTrafficOptions {
  signingSecret: string;
  teamId: string;
  random: Random;
  /** The live /slack/events URLs right now. */
  endpoints: () => string[];
  /** Slack waits 3 s for the 200 before it retries. */
  ackTimeoutMs?: number;
  /** Bounds per event: requests, and time until it is given up (ms). */
  maxAttempts?: number;
  giveUpAfterMs?: number;
}

/** Sends events and remembers how each delivery went. */
export class SlackTraffic {
  readonly deliveries: EventDelivery[] = [];
  /** How long acknowledged requests took (ms). */
  readonly ackTimes: number[] = [];
  private inFlight = 0;
  private idle: Array<() => void> = [];
  private events = 0;
  private readonly ackTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly giveUpAfterMs: number;

  constructor(private readonly options: SlackTrafficOptions) {
    this.ackTimeoutMs = options.ackTimeoutMs ?? 3_000;
    this.maxAttempts = options.maxAttempts ?? 40;
    this.giveUpAfterMs = options.giveUpAfterMs ?? 180_000;
  }

  /** Requests that were retried (all events together). */
  get retries(): number {
    return this.deliveries.reduce((sum, delivery) => sum + delivery.attempts - 1, 0);
  }

  /** Failed requests by reason, e.g. { timeout: 3, ECONNREFUSED: 5 }. */
  failureReasons(): Record<string, number> {
    const reasons: Record<string, number> = {};
    for (const failure of this.deliveries.flatMap((delivery) => delivery.failures)) reasons[failure] = (reasons[failure] ?? 0) + 1;
    return reasons;
  }

  /** Resolves when no delivery is in flight. */
  settled(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Delivers one event (an event_callback envelope around `event`) until acknowledged. */
  async send(event: Record<string, unknown>): Promise<EventDelivery> {
    this.events += 1;
    const delivery: EventDelivery = { eventId: `EvChaos${String(this.events).padStart(5, '0')}`, attempts: 0, acknowledged: false, failures: [] };
    this.deliveries.push(delivery);
    const body = JSON.stringify({
      token: 'legacy', team_id: this.options.teamId, api_app_id: 'AHIPPO', type: 'event_callback',
      event_id: delivery.eventId, event_time: Math.floor(Date.now() / 1000), event,
    });
    this.inFlight += 1;
    try {
      const giveUpAt = Date.now() + this.giveUpAfterMs;
      let previous = '';
      while (!delivery.acknowledged && delivery.attempts < this.maxAttempts && Date.now() < giveUpAt) {
        const endpoints = this.options.endpoints();
        if (endpoints.length === 0) {
          await sleep(100);
          continue;
        }
        // Slack's retry reaches whichever instance the load balancer picks: here, another live one.
        const others = endpoints.filter((endpoint) => endpoint !== previous);
        const endpoint = this.options.random.pick(others.length ? others : endpoints);
        previous = endpoint;
        const failure = await this.post(endpoint, body, delivery.attempts);
        delivery.attempts += 1;
        if (failure === null) delivery.acknowledged = true;
        else {
          delivery.failures.push(failure);
          await sleep(this.backoffMs(failure, delivery.failures.length));
        }
      }
      return delivery;
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const wake of this.idle.splice(0)) wake();
    }
  }

  /**
   * A replica that is gone (refused or reset) is replaced at once by another one; a slow or
   * failing one gets time: 0.5 s, 1 s, 2 s, … up to 8 s, with jitter.
   */
  private backoffMs(failure: string, failures: number): number {
    const jitter = this.options.random.int(0, 200);
    if (failure === 'ECONNREFUSED' || failure === 'ECONNRESET' || failure === 'UND_ERR_SOCKET') return 50 + jitter;
    return Math.min(8_000, 500 * 2 ** Math.min(failures - 1, 4)) + jitter;
  }

  /** One request; null when acknowledged (HTTP 200), else why not. */
  private async post(endpoint: string, body: string, retryNumber: number): Promise<string | null> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...signedHeaders(this.options.signingSecret, body) };
    if (retryNumber > 0) {
      headers['x-slack-retry-num'] = String(retryNumber);
      headers['x-slack-retry-reason'] = 'http_timeout';
    }
    const sentAt = Date.now();
    try {
      const response = await fetch(endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.ackTimeoutMs) });
      await response.arrayBuffer();
      if (response.status !== 200) return String(response.status);
      this.ackTimes.push(Date.now() - sentAt);
      return null;
    } catch (error) {
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timeout';
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
      return cause instanceof Error && 'code' in cause ? String(cause.code) : String(cause);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
