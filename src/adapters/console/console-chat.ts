// The terminal chat: what you type while the agent works steers it; output streams; tool calls
// show compactly; memory notes print as notes. Same runner and storage as the bot. On a terminal
// the input line has editing and history (kept in `historyFile`), and the prompt shows what the
// agent is doing.
import { readFile, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Agent } from '../../core/agent.js';
import type { EventBus } from '../../core/events.js';
import type { Stores, ThreadAddress } from '../../core/store.js';
import { chatHelp, consoleVerbs, runConsoleCommand } from './console-commands.js';
import type { ConsoleOutput } from './console-output.js';
import { ConsoleApprovals } from './console-approvals.js';
import { ConsoleRenderer } from './console-renderer.js';
import { markingDelivered } from '../chat/delivery-marks.js';

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
  /** Where `/export` without a file name writes (default: the working directory). */
  exportDir?: string;
  /** Stops the chat like Ctrl-C does (chat.ts passes SIGINT through this). */
  interrupt?: AbortSignal;
}

/** Why the chat ended: /quit, end of input (the current run was let finish), or Ctrl-C (it was not). */
export type ChatEnd = 'quit' | 'end-of-input' | 'interrupted';

const historySize = 500;

/** Runs the chat until /quit, end of input or an interrupt. */
export async function runConsoleChat(options: ConsoleChatOptions): Promise<ChatEnd> {
  const { agent, output } = options;
  const renderer = new ConsoleRenderer(output);
  // R23: the terminal's user started the session: they approve or deny its tool calls.
  const approvals = new ConsoleApprovals(agent, output, { id: 'local', name: options.userName });
  // Shown on the terminal: not owed any more (R17).
  const show = markingDelivered(async (event) => {
    renderer.handle(event);
    approvals.render(event);
  }, (event) => agent.delivered(event));
  const unsubscribe = options.events.subscribe((event) => {
    if (event.session.threadKey !== options.address.threadKey || event.session.platform !== 'console') return;
    void show(event);
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
    if (!consoleVerbs.includes(verb)) {
      output.line(`  unknown command /${verb} (/help lists them)`);
      return true;
    }
    const session = await agent.findSession(options.address);
    if (!session) {
      output.line('  (no session yet: type a message first)');
      return true;
    }
    await runConsoleCommand(verb, rest, { agent, stores: options.stores, session, output, userName: options.userName, ...(options.exportDir ? { exportDir: options.exportDir } : {}) });
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
    ...(output.terminal ? { output: output.readlineOutput, terminal: true, history, historySize, removeHistoryDuplicates: true } : { terminal: false }),
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
      output.submitted(line);
      if (await approvals.answer(line)) continue;
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
