// A storage outage as one session's runner waits it out: each failed attempt waits a little longer
// (back-off up to 5 s), and an outage longer than `storageOutageNoteMs` is told in the thread once.
// docs/product.md: a database failover stalls the session; it continues by itself when the database is back.
import type { AgentDeps } from '../agent-context.js';
import { backoffMs } from '../retry.js';
import type { SessionRecord } from '../store.js';

export class StorageOutage {
  private since = 0;
  private attempts = 0;
  private noted = false;
  private timer: NodeJS.Timeout | undefined;
  private active = false;

  constructor(private readonly deps: Pick<AgentDeps, 'settings' | 'log' | 'events'>) {}

  /** True from the first failure until `over()`. */
  get ongoing(): boolean {
    return this.active;
  }

  /** True while a retry is scheduled (nothing else should start meanwhile). */
  get waiting(): boolean {
    return this.timer !== undefined;
  }

  /** Another attempt failed: `retry` runs after the back-off. */
  failed(session: SessionRecord, activity: string, error: unknown, retry: () => void): void {
    if (!this.active) Object.assign(this, { active: true, since: Date.now(), attempts: 0, noted: false });
    this.attempts += 1;
    const wait = backoffMs(this.attempts, 500, 5_000);
    this.deps.log.warn({ sessionId: session.id, activity, attempt: this.attempts, retryInMs: wait, err: String(error) }, 'storage-retry');
    if (!this.noted && Date.now() - this.since >= this.deps.settings.storageOutageNoteMs) {
      this.noted = true;
      this.deps.events.emit({ type: 'error', session, error: { code: 'storage', message: 'The database is unreachable.', retryable: true } });
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      retry();
    }, wait);
    this.timer.unref();
  }

  /** An attempt succeeded: the outage (if any) is over. */
  over(session: SessionRecord): void {
    if (!this.active) return;
    this.deps.log.info({ sessionId: session.id, attempts: this.attempts, ms: Date.now() - this.since }, 'storage-recovered');
    this.active = false;
  }

  /** The runner stops: no retry runs any more. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
