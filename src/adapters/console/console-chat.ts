// The terminal chat: what you type while the agent works steers it; output streams; tool calls
// show compactly; memory notes print as notes. Same runner and storage as the bot. On a terminal
// the input line has editing and history (kept in `historyFile`), and the prompt shows what the
// agent is doing.
import { readFile, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Agent } from '../../core/agent.js';
import type { EventBus } from '../../core/events.js';
import { mainDocumentPath } from '../../core/memory/init-messages.js';
import type { Stores, ThreadAddress } from '../../core/store.js';
import { runCommand } from '../chat/command-runner.js';
import type { CommandVerb } from '../chat/commands.js';
import { contextCurveLines } from '../chat/context-curve.js';
import { historyText } from '../chat/memory-browser.js';
import type { ConsoleOutput } from './console-output.js';
import { ConsoleRenderer } from './console-renderer.js';

export interface ConsoleChatOptions {
  agent: Agent;
  stores: Stores;
  events: EventBus;
  input: NodeJS.ReadableStream;
  output: ConsoleOutput;
  /** The thread this terminal talks in (one session). */
  address: ThreadAddress;
  userName: string;
  /** Where typed lines are remembered between runs (terminal only). */
  historyFile?: string;
  /** Stops the chat like Ctrl-C does (chat.ts passes SIGINT through this). */
  interrupt?: AbortSignal;
}

/** Why the chat ended: /quit, end of input (the current run was let finish), or Ctrl-C (it was not). */
export type ChatEnd = 'quit' | 'end-of-input' | 'interrupted';

export const chatHelp = 'Type a message to talk or steer. Commands: /pause /stop /resume /reset /status /memory /remember <fact> /forget <fact> /revert /history [document] /search <words> /help /quit';
const historySize = 500;
/** Commands the shared command runner answers (the same words as in Slack and Discord). */
const memoryVerbs: readonly string[] = ['remember', 'forget', 'revert', 'search'];
/** Versions /history shows. */
const historyShown = 20;

/** Runs the chat until /quit, end of input or an interrupt. */
export async function runConsoleChat(options: ConsoleChatOptions): Promise<ChatEnd> {
  const { agent, output } = options;
  const renderer = new ConsoleRenderer(output);
  const unsubscribe = options.events.subscribe((event) => {
    if (event.session.threadKey !== options.address.threadKey || event.session.platform !== 'console') return;
    renderer.render(event);
    // Shown on the terminal: not owed any more.
    if (event.type === 'answer' || event.type === 'memory-updated' || event.type === 'context-reset') void agent.delivered(event);
  });
  let counter = Date.now();

  async function sessionId(): Promise<string | undefined> {
    return (await agent.findSession(options.address))?.id;
  }

  async function command(line: string): Promise<boolean> {
    const [verb = ''] = line.slice(1).trim().split(/\s+/);
    const rest = line.slice(1).trim().slice(verb.length).trim();
    if (verb === 'quit' || verb === 'exit') return false;
    if (verb === 'help' || verb === '?') {
      output.line(`  ${chatHelp}`);
      return true;
    }
    if (!['pause', 'stop', 'resume', 'reset', 'status', 'memory', ...memoryVerbs, 'history'].includes(verb)) {
      output.line(`  unknown command /${verb} (/help lists them)`);
      return true;
    }
    const id = await sessionId();
    if (!id) {
      output.line('  (no session yet: type a message first)');
      return true;
    }
    const session = (await agent.findSession(options.address))!;
    if (memoryVerbs.includes(verb)) {
      // The chat's own commands, as in Slack and Discord; the terminal's user may do everything.
      const reply = await runCommand(verb as CommandVerb, { agent, stores: options.stores, session, actor: { userId: options.userName, name: options.userName }, prefix: '', access: async () => ({ allowed: true }) }, rest);
      // Hints name commands after the (empty) prefix, "` memory search <words>`": here they are "/search …".
      output.line(indent(reply.text.replace(/` (?:memory )?(\w+)/g, '`/$1')));
      return true;
    }
    switch (verb) {
      case 'history': {
        output.line(indent(await historyOf(options.stores, session.memorySpaceId, rest || mainDocumentPath)));
        break;
      }
      case 'pause':
        await agent.pause(id);
        break;
      case 'stop':
        // Cancels the model call and tools in flight now (pause waits for the next safe point).
        if ((await agent.stopRun(id, 'you')) === 'already-paused') output.line('  (already paused: /resume to continue)');
        break;
      case 'resume':
        await agent.resume(id);
        break;
      case 'reset':
        output.line((await agent.reset(id)) ? '  ♻️ reset requested' : '  (a reset is already pending)');
        break;
      case 'status': {
        const status = await agent.status(id);
        const usage = status.usage;
        output.line(`  state ${status.state} · context ${status.contextPercent}% (${status.contextTokens} tokens, segment ${status.segmentOrdinal}) · queued ${status.queued}`);
        output.line(
          `  tokens worker ${usage.worker.promptTokens}/${usage.worker.completionTokens} · summarizer ${usage.summarizer.promptTokens}/${usage.summarizer.completionTokens} · decider ${usage.decider.promptTokens}/${usage.decider.completionTokens} (prompt/completion) · cache ${Math.round(status.cacheRatio * 100)}%`,
        );
        // Where the memory stands: the next summarizer and decider fork when the context reaches it (R2).
        const { percent, tokensAway } = status.memoryCheckpoint;
        output.line(`  memory: next checkpoint at ${percent}% of the window (${tokensAway} tokens from now) · summarizer calls ${usage.summarizer.calls} · resets ${status.segmentOrdinal - 1}`);
        for (const line of contextCurveLines(status.contextHistory, { fenced: false })) output.line(`  ${line}`);
        break;
      }
      case 'memory': {
        const documents = await options.stores.documents.list(session.memorySpaceId, session.id);
        const main = documents.find((document) => document.path === mainDocumentPath);
        output.line(`--- ${mainDocumentPath} (v${main?.version ?? 0}) ---\n${main?.content ?? '(empty)'}\n--- documents ---`);
        output.line(documents.map((document) => `  ${document.path}  v${document.version}`).join('\n'));
        break;
      }
    }
    return true;
  }

  output.line(chatHelp);
  // Work left by an earlier process (Ctrl-C or a crash mid-task) continues now; the renderer
  // says so when a run starts before anything was typed.
  await agent.recover();
  await reportWaitingState();

  const history = output.terminal && options.historyFile ? await readHistory(options.historyFile) : [];
  const lines = createInterface({
    input: options.input,
    ...(output.terminal ? { output: output.writable, terminal: true, history, historySize, removeHistoryDuplicates: true } : { terminal: false }),
  });
  if (output.terminal) {
    output.attachPrompt(lines);
    if (options.historyFile) {
      const file = options.historyFile;
      lines.on('history', (entries: string[]) => void writeFile(file, `${[...entries].reverse().join('\n')}\n`).catch(() => undefined));
    }
  }
  let end = 'end-of-input' as ChatEnd;
  const interrupt = () => {
    end = 'interrupted';
    lines.close();
  };
  // On a terminal readline turns Ctrl-C into this event instead of a signal.
  lines.on('SIGINT', interrupt);
  options.interrupt?.addEventListener('abort', interrupt, { once: true });

  try {
    for await (const raw of lines) {
      const line = raw.trim();
      if (!line) continue;
      if (line.startsWith('/')) {
        if (!(await command(line))) {
          end = 'quit';
          break;
        }
        continue;
      }
      renderer.noteInput();
      counter += 1;
      await agent.submit(
        {
          address: options.address,
          platformMessageKey: `console:${options.address.threadKey}:${counter}`,
          authorId: 'local',
          authorName: options.userName,
          text: line,
        },
        { startSession: true, title: line.slice(0, 80) },
      );
    }
  } finally {
    output.detachPrompt();
    options.interrupt?.removeEventListener('abort', interrupt);
  }
  if (end === 'interrupted') {
    output.setStatus(undefined);
    output.line('  stopping: an unfinished task continues when you start the chat again');
  } else {
    // /quit or end of input: let the current run finish before leaving.
    const id = await sessionId();
    if (id) await (await agent.runner(id)).whenIdle();
  }
  output.close();
  unsubscribe();
  return end;

  async function reportWaitingState(): Promise<void> {
    const id = await sessionId();
    if (!id) return;
    const { state } = await agent.status(id);
    if (state === 'paused') output.line('  ⏸ this thread is paused (/resume to continue)');
    if (state === 'failed') output.line('  ✗ the last run in this thread failed (/resume to try again)');
  }
}

async function readHistory(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  // readline wants the newest entry first.
  return text.split('\n').filter(Boolean).slice(-historySize).reverse();
}

/** The newest versions of a space document, with author, time and reason. */
async function historyOf(stores: Stores, spaceId: string, path: string): Promise<string> {
  const document = await stores.documents.read({ spaceId, sessionKey: '', path });
  if (!document) return `no document ${path} (/memory lists them)`;
  const page = await stores.documents.history(document.id, { offset: 0, limit: historyShown });
  return historyText(path, { ...page, offset: 0 }, () => null);
}

function indent(text: string): string {
  return text.split('\n').map((line) => `  ${line}`).join('\n');
}
