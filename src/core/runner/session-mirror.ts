// A runner's copy of its session's row. The row is the truth for flags and segments (R8, R11): a
// person's command said to another replica changes it there, so the copy is marked stale and read
// again before the runner acts on it, and a read begun before a change of this runner's own never
// puts the old flags back.
import type { SessionFlags, SessionRecord, SessionStore } from '../store.js';

export class SessionMirror {
  /** Another replica may have changed the session's flags (a person's command it received). */
  stale = false;
  /** Bumped by every change this runner makes, so a read begun before one never undoes it. */
  private changes = 0;

  constructor(
    private readonly sessions: Pick<SessionStore, 'get' | 'setFlags'>,
    private current: SessionRecord,
  ) {}

  get record(): SessionRecord {
    return this.current;
  }

  /** Applies a change this runner made to the row (or that a statement of its own made there). */
  change(patch: Partial<SessionRecord>): void {
    this.current = { ...this.current, ...patch };
    this.changes += 1;
  }

  /** Stores flags on the row, then here. */
  async setFlags(flags: Partial<SessionFlags>): Promise<void> {
    await this.sessions.setFlags(this.current.id, flags);
    this.change(flags);
  }

  /** Reads the row again (another replica may have changed it). */
  async refresh(): Promise<void> {
    this.stale = false;
    // A row read while this runner changed its flags (a resume during a reset's claim) may predate
    // the change: read again rather than put the old flags back.
    for (;;) {
      const changes = this.changes;
      const session = await this.sessions.get(this.current.id);
      if (!session) return;
      if (changes === this.changes) {
        this.current = session;
        return;
      }
    }
  }
}
