// A session against its spend caps (SESSION_BUDGET_USD, CHANNEL_DAILY_BUDGET_USD, a raised
// budget): where it stands before each model call, the thread told once at 80% and at 100% of a
// cap, and a person's raise. A raise is the session's only: the channel's daily cap is the
// operator's (docs/security.md), set in configuration and renewed at 00:00 UTC, never by a command.
import type { AgentDeps } from '../agent-context.js';
import { budgetState, spendOf, utcDayStart, type BudgetState } from '../spend.js';
import type { SessionRecord } from '../store.js';

/** One session's budget; the runner asks it before the worker calls the model. */
export class SessionBudget {
  /** The note given last (level, scope, cap, day), so each is given once. */
  private noted = '';

  constructor(private readonly deps: Pick<AgentDeps, 'settings' | 'stores' | 'clock' | 'log' | 'events'>) {}

  /** Where `session` stands (no query when no cap is set); the thread is told at 80% and 100%. */
  async check(session: SessionRecord): Promise<BudgetState> {
    const { settings, stores, clock } = this.deps;
    if (settings.sessionBudgetUsd === null && settings.channelDailyBudgetUsd === null && session.budgetUsd === null) return { level: 'ok' };
    const now = clock.now();
    const state = await budgetState({ settings, usage: stores.usage, now }, session);
    if (state.level !== 'ok') {
      // Told once per cap, level and day here; the chat adapters' keys make a repeat after a restart harmless.
      const period = state.scope === 'channel' ? utcDayStart(now).toISOString().slice(0, 10) : 'session';
      const noted = `${state.level}:${state.scope}:${state.capUsd}:${period}`;
      if (noted !== this.noted) {
        this.noted = noted;
        this.deps.log.warn({ sessionId: session.id, ...state }, 'budget-note');
        this.deps.events.emit({ type: 'budget', session, ...state, period });
      }
    }
    return state;
  }

  /**
   * A person allowed `usd` more: the session's cap grows from what it spent (or its cap, if
   * higher); the channel's daily cap does not. Returns the session's new cap.
   */
  async raise(session: SessionRecord, usd: number): Promise<number> {
    const { settings, stores } = this.deps;
    const spent = spendOf(await stores.usage.totals({ sessionId: session.id }), settings).total;
    const sessionCap = Math.max(session.budgetUsd ?? settings.sessionBudgetUsd ?? 0, spent) + usd;
    await stores.sessions.setBudget(session.id, sessionCap);
    return sessionCap;
  }
}
