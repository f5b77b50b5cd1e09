// Carries out a command word for a session and says what happened, in Markdown. The same on every
// platform; adapters decide where the answer goes (thread reply, ephemeral reply).
import type { Agent, SessionStatus } from '../../core/agent.js';
import type { SessionRecord, Stores } from '../../core/store.js';
import { helpText, type CommandVerb } from './commands.js';
import { memoryRunChanges } from '../../core/memory-run-changes.js';
import { choiceText, revertMemoryRun } from './memory-actions.js';
import { formatDollars } from '../../core/prices.js';
import { changeSummary, formatTokens } from './notes.js';

/** Who asks, for which session, and how they invoke Hippo on this platform. */
export interface CommandScope {
  agent: Agent;
  stores: Pick<Stores, 'documents' | 'events'>;
  session: SessionRecord;
  actor: { userId: string; name: string };
  /** How people address Hippo here, e.g. "@hippo" or "/hippo" (used in help and hints). */
  prefix: string;
  /** What followed the command word ("5" in "budget 5"). */
  argument?: string;
}

/** MAIN.md is shown up to this many characters in `memory`. */
const mainPreviewChars = 2_500;

/** Runs the command and returns the answer text (Markdown). */
export async function runCommand(verb: CommandVerb, scope: CommandScope): Promise<string> {
  const { agent, session } = scope;
  switch (verb) {
    case 'pause':
      if (session.paused) return '⏸️ Already paused.';
      await agent.pause(session.id);
      return `⏸️ Pausing at the next safe point. Say \`${scope.prefix} resume\` (or reply in the thread) to continue.`;
    case 'resume':
      await agent.resume(session.id);
      return '▶️ Resuming.';
    case 'stop':
      return (await agent.stopRun(session.id, scope.actor.name)) === 'already-paused'
        ? `⏸️ Nothing is running: this session is paused. Reply or say \`${scope.prefix} resume\` to continue.`
        : `⏹️ ${scope.actor.name} stopped the work in progress. Reply in the thread or say \`${scope.prefix} resume\` to continue.`;
    case 'reset':
      return (await agent.reset(session.id))
        ? '♻️ Starting a fresh context at the next safe point; memory documents are kept.'
        : 'A reset is already under way.';
    case 'status':
      return statusText(await agent.status(session.id));
    case 'memory':
      return memoryText(scope);
    case 'revert':
    case 'forget':
      return revertLatest(scope);
    case 'budget':
      return raiseBudget(scope);
    case 'help':
      return helpText(scope.prefix);
  }
}

/** `budget <usd>`: the session may spend that much more (and its channel today, when capped). */
async function raiseBudget(scope: CommandScope): Promise<string> {
  const match = /^\$?(\d{1,6}(?:\.\d{1,2})?)\s*(usd|\$)?$/i.exec(scope.argument ?? '');
  const usd = match?.[1] ? Number(match[1]) : Number.NaN;
  if (!(usd > 0)) return `Say how much more this session may spend, in US dollars: \`${scope.prefix} budget 5\` allows $5 more.`;
  await scope.agent.raiseBudget(scope.session.id, usd);
  const status = await scope.agent.status(scope.session.id);
  const cap = status.budgetUsd === null ? '' : ` (its budget is now ${formatDollars(status.budgetUsd)})`;
  return `💸 ${scope.actor.name} allowed ${formatDollars(usd)} more${cap}; continuing.`;
}

/** State, context use, tokens, spend and cache ratio of a session. */
export function statusText(status: SessionStatus): string {
  const { usage } = status;
  const prompt = usage.worker.promptTokens + usage.summarizer.promptTokens + usage.decider.promptTokens;
  const completion = usage.worker.completionTokens + usage.summarizer.completionTokens + usage.decider.completionTokens;
  const queued = status.queued > 0 ? ` · ${status.queued} message${status.queued === 1 ? '' : 's'} queued` : '';
  return [
    `**Status:** ${status.state}${queued}`,
    `**Context:** ${status.contextPercent}% (${formatTokens(status.contextTokens)} tokens, context ${status.segmentOrdinal})`,
    `**Tokens so far:** ${formatTokens(prompt)} prompt, ${formatTokens(completion)} completion · cache ${Math.round(status.cacheRatio * 100)}%`,
    `**Model calls:** worker ${usage.worker.calls}, summarizer ${usage.summarizer.calls}, decider ${usage.decider.calls}`,
    ...(status.spend ? [spendLine(status)] : []),
  ].join('\n');
}

/** "**Spend:** $0.42 (worker $0.30 · summarizer $0.08 · decider $0.04) · budget $5.00". */
function spendLine(status: SessionStatus): string {
  const spend = status.spend;
  if (!spend) return '';
  const roles = (['worker', 'summarizer', 'decider'] as const).map((role) => `${role} ${formatDollars(spend.byRole[role])}`).join(' · ');
  const budget = status.budgetUsd === null ? '' : ` · budget ${formatDollars(status.budgetUsd)}`;
  return `**Spend:** ${formatDollars(spend.total)}${spend.priced ? '' : ' (some calls unpriced)'} (${roles})${budget}`;
}

async function memoryText(scope: CommandScope): Promise<string> {
  const { session } = scope;
  const documents = await scope.stores.documents.list(session.memorySpaceId, session.id);
  if (documents.length === 0) return 'No memory documents yet.';
  const main = documents.find((document) => document.path === 'MAIN.md' && document.sessionKey === '');
  const list = documents.map((document) => `• ${document.path} v${document.version} (${document.content.length} chars)`).join('\n');
  if (!main) return `**Memory documents:**\n${list}`;
  const preview = main.content.length > mainPreviewChars
    ? `${main.content.slice(0, mainPreviewChars)}\n… (${main.content.length - mainPreviewChars} more characters)`
    : main.content;
  return `**MAIN.md** (v${main.version})\n\`\`\`\n${preview.replace(/```/g, "'''")}\n\`\`\`\n**Memory documents:**\n${list}`;
}

/** R13: undoes the last memory change of the space, saying first which one it is. */
async function revertLatest(scope: CommandScope): Promise<string> {
  const documents = scope.stores.documents;
  const latest = await documents.latestRevertibleRun(scope.session.memorySpaceId);
  if (!latest) return 'There is no memory change to undo in this space.';
  const changes = await memoryRunChanges(documents, latest.memoryRunId);
  const what = `the memory change of ${latest.at.toISOString().slice(0, 16).replace('T', ' ')} UTC (${changes.map(changeSummary).join(', ') || 'no document'})`;
  const result = await revertMemoryRun(documents, latest.memoryRunId, { kind: 'person', userId: scope.actor.userId, name: scope.actor.name });
  const lines: string[] = [];
  if (result.reverted.length > 0) lines.push(`↩️ Undid ${what}: ${result.reverted.join(', ')} restored as before it.`);
  else lines.push(`The last memory change is ${what}.`);
  for (const change of result.needsChoice) lines.push(`${choiceText(change)} Use **Revert** on that change's note to choose; nothing was changed in ${change.path}.`);
  if (result.reverted.length === 0 && result.needsChoice.length === 0) lines.push('It was already reverted.');
  return lines.join('\n');
}
