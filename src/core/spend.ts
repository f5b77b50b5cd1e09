// What a session and its channel spent, and where that stands against their budgets (issue #16):
// at 80% a note, at 100% memory work stops and the worker stops at its next checkpoint. Nothing is
// lost: the session stays resumable once a person raises the budget or the next day begins.
import type { AgentSettings } from './agent-context.js';
import type { AgentRole } from './messages.js';
import { costOf, pricesFor } from './prices.js';
import type { SessionRecord, UsageStore, UsageTotal } from './store.js';

/** Dollars by role; `priced` is false when some model's prices are unknown (then the sums are partial). */
export interface Spend {
  total: number;
  byRole: Record<AgentRole, number>;
  priced: boolean;
}

/** The dollars of `totals` at the configured or built-in prices. */
export function spendOf(totals: readonly UsageTotal[], settings: Pick<AgentSettings, 'model' | 'prices'>): Spend {
  const spend: Spend = { total: 0, byRole: { worker: 0, summarizer: 0, decider: 0 }, priced: true };
  for (const row of totals) {
    const prices = pricesFor(row.model, row.model === settings.model ? settings.prices ?? undefined : undefined);
    if (!prices) {
      spend.priced = false;
      continue;
    }
    const dollars = costOf(prices, row);
    spend.byRole[row.role] += dollars;
    spend.total += dollars;
  }
  return spend;
}

/** What the memory runs (summarizer + decider) of one segment cost; null when prices are unknown. */
export async function memoryCostOfSegment(deps: { settings: Pick<AgentSettings, 'model' | 'prices'>; usage: UsageStore }, sessionId: string, segmentId: string): Promise<number | null> {
  const spend = spendOf(await deps.usage.totals({ sessionId, segmentId }), deps.settings);
  if (!spend.priced && spend.total === 0) return null;
  return spend.byRole.summarizer + spend.byRole.decider;
}

/** Where a session stands against its budgets: fine, over 80% of one, or over one. */
export type BudgetState =
  | { level: 'ok' }
  | { level: 'warning' | 'reached'; scope: 'session' | 'channel'; spentUsd: number; capUsd: number };

/** The share of a budget at which people are told. */
export const budgetWarningShare = 0.8;

/** The start of the current UTC day (a channel's daily budget renews then). */
export function utcDayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/**
 * The session's budget state: its own cap (the session's raised cap, else SESSION_BUDGET_USD) and
 * its channel's cap for today (CHANNEL_DAILY_BUDGET_USD: the operator's, no command raises it).
 * Costs no query when no budget is configured.
 */
export async function budgetState(deps: { settings: AgentSettings; usage: UsageStore; now: Date }, session: SessionRecord): Promise<BudgetState> {
  const sessionCap = session.budgetUsd ?? deps.settings.sessionBudgetUsd;
  const channelCap = deps.settings.channelDailyBudgetUsd;
  const states: BudgetState[] = [];
  if (sessionCap !== null) {
    const spent = spendOf(await deps.usage.totals({ sessionId: session.id }), deps.settings).total;
    states.push(levelOf('session', spent, sessionCap));
  }
  if (channelCap !== null) {
    const spent = spendOf(await deps.usage.totals({ channel: session, since: utcDayStart(deps.now) }), deps.settings).total;
    states.push(levelOf('channel', spent, channelCap));
  }
  // The most pressing one: reached over warning over ok.
  const rank = (state: BudgetState) => (state.level === 'reached' ? 2 : state.level === 'warning' ? 1 : 0);
  return states.sort((left, right) => rank(right) - rank(left))[0] ?? { level: 'ok' };
}

function levelOf(scope: 'session' | 'channel', spentUsd: number, capUsd: number): BudgetState {
  if (spentUsd >= capUsd) return { level: 'reached', scope, spentUsd, capUsd };
  if (spentUsd >= capUsd * budgetWarningShare) return { level: 'warning', scope, spentUsd, capUsd };
  return { level: 'ok' };
}
