// Carries out a command word for a session and says what happened, in Markdown. The same on every
// platform; adapters decide where the answer goes (thread reply, ephemeral reply) and add buttons.
import { approvalStatusLines } from './approval-card.js';
import type { Agent, Reviewer, SessionStatus } from '../../core/agent.js';
import { contextCurveLines } from './context-curve.js';
import { memoryRunChanges } from '../../core/memory-run-changes.js';
import type { SessionRecord, Stores } from '../../core/store.js';
import { helpText, type CommandVerb } from './commands.js';
import type { AccessDecision, MemoryAction } from './memory-access.js';
import { formatDollars } from '../../core/prices.js';
import { browserText, choiceText } from './memory-browser.js';
import { emptyExportText, exportKey, exportRunningText, memoryExportFile, oneExportAtATime } from './memory-export.js';
import { memorySearchText } from './memory-search.js';
import { changeSummary, formatTokens } from './notes.js';

/** Who asks, for which session, and how they invoke Hippo on this platform. */
export interface CommandScope {
  agent: Agent;
  stores: Pick<Stores, 'documents' | 'events' | 'reviews' | 'spaces' | 'context' | 'sessions'>;
  session: SessionRecord;
  actor: { userId: string; name: string };
  /** How people address Hippo here, e.g. "@hippo" or "/hippo" (used in help and hints). */
  prefix: string;
  /** May the actor do this to the session's memory space (membership, MEMORY_EDITORS)? */
  access: (action: MemoryAction) => Promise<AccessDecision>;
  /**
   * Must what the space holds (search hits, the export) go only to the asker here (people the
   * memory gate refuses can read this conversation)? Absent: never.
   */
  answersPrivately?: () => Promise<boolean>;
}

/** A command's answer; `private`: only the person who asked should see it (a refusal, or memory shown where outsiders read). */
export interface CommandReply {
  text: string;
  private: boolean;
  /** A file to send with the answer (memory export). */
  file?: { name: string; data: Buffer };
}

/**
 * Verbs whose answer shows what the memory space holds, word for word. (The browser, `memory`,
 * lists documents; opening one is checked against the person who clicks.)
 */
const contentVerbs: ReadonlySet<CommandVerb> = new Set(['search', 'export']);

/** Which memory action each memory verb is. */
const memoryActions: Partial<Record<CommandVerb, MemoryAction>> = { memory: 'view', search: 'view', export: 'view', revert: 'revert', remember: 'edit', forget: 'edit', pin: 'pin' };

/** MAIN.md is shown up to this many characters by mainPreview. */
const mainPreviewChars = 2_500;

/** Runs the command (`rest`: the text after the verb) and returns the answer. */
export async function runCommand(verb: CommandVerb, scope: CommandScope, rest = ''): Promise<CommandReply> {
  const action = memoryActions[verb];
  if (action) {
    const decision = await scope.access(action);
    if (!decision.allowed) return { text: decision.reason, private: true };
  }
  const privately = contentVerbs.has(verb) && (await scope.answersPrivately?.()) === true;
  if (verb === 'export') {
    const reply = await exportReply(scope);
    return { ...reply, private: reply.private || privately };
  }
  return { text: await commandText(verb, scope, rest), private: privately };
}

/** memory export: the space's documents and their history as a zip (one at a time per person and space). */
async function exportReply(scope: CommandScope): Promise<CommandReply> {
  const { session } = scope;
  const exported = await oneExportAtATime(exportKey(session.platform, scope.actor.userId, session.memorySpaceId), async () => ({ file: await memoryExportFile(scope.stores.documents, session.memorySpaceId) }));
  if (!exported) return { text: exportRunningText, private: true };
  const { file } = exported;
  if (!file) return { text: emptyExportText, private: false };
  return { text: `📦 ${file.summary}`, private: false, file: { name: file.name, data: file.data } };
}

async function commandText(verb: CommandVerb, scope: CommandScope, rest: string): Promise<string> {
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
      return browserText(await scope.stores.documents.spaceDocuments(session.memorySpaceId));
    case 'search':
      return rest === '' ? `Say what to look for: \`${scope.prefix} memory search <words>\`.` : memorySearchText(scope.stores, session.memorySpaceId, rest, `${session.platform}:${scope.actor.userId}`);
    case 'export':
      return (await exportReply(scope)).text;
    case 'revert':
      return revertLatest(scope);
    case 'budget':
      return raiseBudget(scope, rest);
    case 'remember':
    case 'forget':
      return rememberRequest(verb, scope, rest);
    case 'pin':
      return pin(scope, rest);
    case 'help':
      return helpText(scope.prefix);
  }
}

/** `budget <usd>`: the session may spend that much more; the channel's daily cap is the operator's. */
async function raiseBudget(scope: CommandScope, rest: string): Promise<string> {
  const match = /^\$?(\d{1,6}(?:\.\d{1,2})?)\s*(usd|\$)?$/i.exec(rest);
  const usd = match?.[1] ? Number(match[1]) : Number.NaN;
  if (!(usd > 0)) return `Say how much more this session may spend, in US dollars: \`${scope.prefix} budget 5\` allows $5 more.`;
  const state = await scope.agent.raiseBudget(scope.session.id, usd);
  const status = await scope.agent.status(scope.session.id);
  const cap = status.budgetUsd === null ? '' : ` (its budget is now ${formatDollars(status.budgetUsd)})`;
  if (state.level === 'reached' && state.scope === 'channel') {
    return `💸 ${scope.actor.name} allowed ${formatDollars(usd)} more for this session${cap}, but this channel's daily budget is used up (${formatDollars(state.spentUsd)} of ${formatDollars(state.capUsd)}), and only the operator changes it: reply after it renews at 00:00 UTC and I continue.`;
  }
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
    memoryLine(status),
    ...(status.spend ? [spendLine(status)] : []),
    ...contextCurveLines(status.contextHistory, { fenced: true, bold: true }),
    // R23: who approved or denied which tool call, and when.
    ...(status.approvals.length > 0 ? ['**Approvals:**', ...approvalStatusLines(status.approvals).map((line) => `• ${line}`)] : []),
  ].join('\n');
}

/**
 * Where the memory stands: "**Memory:** next checkpoint at 6% of the window (about 3.2k tokens
 * from now) · 2 summaries · 1 reset". A person sees when the summarizer will next read the thread.
 */
export function memoryLine(status: Pick<SessionStatus, 'memoryCheckpoint' | 'usage' | 'segmentOrdinal'>): string {
  const { percent, tokensAway } = status.memoryCheckpoint;
  const runs = status.usage.summarizer.calls;
  const resets = Math.max(0, status.segmentOrdinal - 1);
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
  return `**Memory:** next checkpoint at ${percent}% of the window (about ${formatTokens(tokensAway)} tokens from now) · ${plural(runs, 'summarizer call')} · ${plural(resets, 'reset')}`;
}

/** "**Spend:** $0.42 (worker $0.30 · summarizer $0.08 · decider $0.04) · budget $5.00". */
function spendLine(status: SessionStatus): string {
  const spend = status.spend;
  if (!spend) return '';
  const roles = (['worker', 'summarizer', 'decider'] as const).map((role) => `${role} ${formatDollars(spend.byRole[role])}`).join(' · ');
  const budget = status.budgetUsd === null ? '' : ` · budget ${formatDollars(status.budgetUsd)}`;
  return `**Spend:** ${formatDollars(spend.total)}${spend.priced ? '' : ' (some calls unpriced)'} (${roles})${budget}`;
}

/** MAIN.md (the start of it) and the list of documents: what a reset's "View memory" shows. */
export async function mainPreview(stores: CommandScope['stores'], session: SessionRecord): Promise<string> {
  const documents = await stores.documents.list(session.memorySpaceId, session.id);
  if (documents.length === 0) return 'No memory documents yet.';
  const main = documents.find((document) => document.path === 'MAIN.md' && document.sessionKey === '');
  const list = documents.map((document) => `• ${document.path} v${document.version} (${document.content.length} chars)`).join('\n');
  if (!main) return `**Memory documents:**\n${list}`;
  const preview = main.content.length > mainPreviewChars
    ? `${main.content.slice(0, mainPreviewChars)}\n… (${main.content.length - mainPreviewChars} more characters)`
    : main.content;
  return `**MAIN.md** (v${main.version})\n\`\`\`\n${preview.replace(/```/g, "'''")}\n\`\`\`\n**Memory documents:**\n${list}`;
}

function reviewer(scope: CommandScope): Reviewer {
  return { userId: scope.actor.userId, name: scope.actor.name, sessionId: scope.session.id };
}

/** R13: undoes the last memory change of the space, saying first which one it is. */
async function revertLatest(scope: CommandScope): Promise<string> {
  const documents = scope.stores.documents;
  const latest = await documents.latestRevertibleRun(scope.session.memorySpaceId);
  if (!latest) return 'There is no memory change to undo in this space.';
  const changes = await memoryRunChanges(documents, latest.memoryRunId);
  const what = `the memory change of ${latest.at.toISOString().slice(0, 16).replace('T', ' ')} UTC (${changes.map(changeSummary).join(', ') || 'no document'})`;
  const result = await scope.agent.review.revert(latest.memoryRunId, reviewer(scope));
  const lines: string[] = [];
  if (result.reverted.length > 0) lines.push(`↩️ Undid ${what}: ${result.reverted.join(', ')} restored as before it.`);
  else lines.push(`The last memory change is ${what}.`);
  for (const change of result.needsChoice) lines.push(`${choiceText(change)} Use **Revert** on that change's note to choose; nothing was changed in ${change.path}.`);
  if (result.reverted.length === 0 && result.needsChoice.length === 0) lines.push('It was already reverted.');
  return lines.join('\n');
}

/** remember / forget: a summarizer run told that this person asked. */
async function rememberRequest(kind: 'remember' | 'forget', scope: CommandScope, text: string): Promise<string> {
  if (text === '') {
    return kind === 'remember'
      ? `Say what to remember: \`${scope.prefix} remember <fact>\`.`
      : `Say what to forget: \`${scope.prefix} forget <fact>\`. To undo the last memory change, say \`${scope.prefix} revert\`.`;
  }
  await scope.agent.review[kind](scope.session, reviewer(scope), text);
  const verb = kind === 'remember' ? 'remember' : 'forget';
  return `🧠 Asked background memory to ${verb}: “${text.length > 300 ? `${text.slice(0, 300)}…` : text}”. Its note in this thread will say what it changed.`;
}

/** pin <text>: pins the line that has it (adding it to MAIN.md when no line does). */
async function pin(scope: CommandScope, text: string): Promise<string> {
  if (text === '') return `Say which line to pin: \`${scope.prefix} pin <text of the line>\`.`;
  const outcome = await scope.agent.review.pinByText(scope.session.memorySpaceId, text, reviewer(scope));
  switch (outcome.status) {
    case 'pinned':
      return `📌 Pinned in ${outcome.path}: “${outcome.line}”. Background memory will keep it word for word.`;
    case 'added':
      return `📌 No line had that text, so I added it to ${outcome.path} and pinned it: “${outcome.line}”.`;
    case 'ambiguous':
      return `Several lines have that text; say more of the one to pin:\n${outcome.matches.map((match) => `• ${match.path}: “${match.line}”`).join('\n')}`;
  }
}
