// The terminal chat's slash commands: the chat commands of Slack and Discord (`/pin`, `/search`,
// `/export`, `/remember` … through the shared command runner; the terminal's user may do
// everything), and what only a terminal has: `/history` of a document, `/export` to a file.
import { access, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Agent } from '../../core/agent.js';
import { mainDocumentPath } from '../../core/memory-store.js';
import type { SessionRecord, Stores } from '../../core/store.js';
import { approvalStatusLines } from '../chat/approval-card.js';
import { runCommand } from '../chat/command-runner.js';
import type { CommandVerb } from '../chat/commands.js';
import { contextCurveLines } from '../chat/context-curve.js';
import { historyText } from '../chat/memory-browser.js';
import type { ConsoleOutput } from './console-output.js';

export const chatHelp = 'Type a message to talk or steer; y / a / n [reason] answers a tool call that waits for approval. Commands: /pause /stop /resume /reset /status /memory /remember <fact> /forget <fact> /pin <text> /revert /history [document] /search <words> /export [file.zip] /help /quit';

/** Every command word the terminal knows (besides /help and /quit). */
export const consoleVerbs: readonly string[] = ['pause', 'stop', 'resume', 'reset', 'status', 'memory', 'remember', 'forget', 'pin', 'revert', 'history', 'search', 'export'];
/** Commands the shared command runner answers (the same words as in Slack and Discord). */
const sharedVerbs: readonly string[] = ['remember', 'forget', 'pin', 'revert', 'search'];
/** Versions /history shows. */
const historyShown = 20;

export interface ConsoleCommandScope {
  agent: Agent;
  stores: Stores;
  session: SessionRecord;
  output: ConsoleOutput;
  userName: string;
  /** Where `/export` without a file name writes (default: the working directory). */
  exportDir?: string;
}

/** Carries out `/verb rest` for the session and prints the answer. */
export async function runConsoleCommand(verb: string, rest: string, scope: ConsoleCommandScope): Promise<void> {
  const { agent, session, output } = scope;
  // "/memory search <words>" and "/memory export [file]" as in the chat ("memory search …").
  const sub = verb === 'memory' ? /^(search|export)\b\s*([\s\S]*)$/i.exec(rest) : null;
  if (sub) return runConsoleCommand(sub[1]!.toLowerCase(), sub[2] ?? '', scope);
  if (sharedVerbs.includes(verb)) {
    const reply = await runCommand(verb as CommandVerb, commandScope(scope), rest);
    // Hints name commands after the (empty) prefix, "` memory search <words>`": here they are "/search …".
    output.markdownLine(reply.text.replace(/` (?:memory )?(\w+)/g, '`/$1'), 2);
    return;
  }
  switch (verb) {
    case 'export':
      return exportMemory(scope, rest);
    case 'history':
      output.markdownLine(await historyOf(scope.stores, session.memorySpaceId, rest || mainDocumentPath), 2);
      return;
    case 'pause':
      return agent.pause(session.id);
    case 'stop':
      // Cancels the model call and tools in flight now (pause waits for the next safe point).
      if ((await agent.stopRun(session.id, 'you')) === 'already-paused') output.line('  (already paused: /resume to continue)');
      return;
    case 'resume':
      return agent.resume(session.id);
    case 'reset':
      output.line((await agent.reset(session.id)) ? '  ♻️ reset requested' : '  (a reset is already pending)');
      return;
    case 'status': {
      const status = await agent.status(session.id);
      const usage = status.usage;
      output.line(`  state ${status.state} · context ${status.contextPercent}% (${status.contextTokens} tokens, segment ${status.segmentOrdinal}) · queued ${status.queued}`);
      output.line(
        `  tokens worker ${usage.worker.promptTokens}/${usage.worker.completionTokens} · summarizer ${usage.summarizer.promptTokens}/${usage.summarizer.completionTokens} · decider ${usage.decider.promptTokens}/${usage.decider.completionTokens} (prompt/completion) · cache ${Math.round(status.cacheRatio * 100)}%`,
      );
      // Where the memory stands: the next summarizer and decider fork when the context reaches it (R2).
      const { percent, tokensAway } = status.memoryCheckpoint;
      output.line(`  memory: next checkpoint at ${percent}% of the window (${tokensAway} tokens from now) · summarizer calls ${usage.summarizer.calls} · resets ${status.segmentOrdinal - 1}`);
      for (const line of contextCurveLines(status.contextHistory, { fenced: false })) output.line(`  ${line}`);
      for (const line of approvalStatusLines(status.approvals)) output.line(`  approval: ${line}`);
      return;
    }
    case 'memory': {
      const documents = await scope.stores.documents.list(session.memorySpaceId, session.id);
      const main = documents.find((document) => document.path === mainDocumentPath);
      output.line(`--- ${mainDocumentPath} (v${main?.version ?? 0}) ---`);
      output.markdownLine(main?.content ?? '(empty)');
      output.line('--- documents ---');
      output.line(documents.map((document) => `  ${document.path}  v${document.version}`).join('\n'));
      return;
    }
  }
}

/** `/export [file.zip]`: the memory export (what `memory export` uploads in chat) written to a file. */
async function exportMemory(scope: ConsoleCommandScope, rest: string): Promise<void> {
  const reply = await runCommand('export', commandScope(scope));
  if (!reply.file) {
    scope.output.markdownLine(reply.text, 2);
    return;
  }
  const asked = rest.trim();
  const path = asked !== '' ? resolve(asked) : await freeName(resolve(scope.exportDir ?? '.'), reply.file.name);
  try {
    // Never over an existing file: a name the person gave may be a file they keep.
    await writeFile(path, reply.file.data, { flag: 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' ? 'it exists already: give another name' : code === 'ENOENT' ? 'its folder does not exist' : (error as Error).message;
    scope.output.line(`  could not write ${path}: ${why} (/export FILE.zip)`);
    return;
  }
  scope.output.markdownLine(`${reply.text.replace(/^📦 /, `📦 wrote ${path}: `)}`, 2);
}

/** `name` in `dir`, or name-2.zip, name-3.zip … when it is taken. */
async function freeName(dir: string, name: string): Promise<string> {
  for (let index = 1; index < 1_000; index += 1) {
    const candidate = join(dir, index === 1 ? name : name.replace(/\.zip$/, `-${index}.zip`));
    if (!(await access(candidate).then(() => true, () => false))) return candidate;
  }
  return join(dir, name.replace(/\.zip$/, `-${Date.now()}.zip`));
}

function commandScope(scope: ConsoleCommandScope): Parameters<typeof runCommand>[1] {
  return { agent: scope.agent, stores: scope.stores, session: scope.session, actor: { userId: scope.userName, name: scope.userName }, prefix: '', access: async () => ({ allowed: true }) };
}

/** The newest versions of a space document, with author, time and reason. */
async function historyOf(stores: Stores, spaceId: string, path: string): Promise<string> {
  const document = await stores.documents.read({ spaceId, sessionKey: '', path });
  if (!document) return `no document ${path} (/memory lists them)`;
  const page = await stores.documents.history(document.id, { offset: 0, limit: historyShown });
  return historyText(path, { ...page, offset: 0 }, () => null);
}
