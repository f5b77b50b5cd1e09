// The terminal chat: what you type while the agent works steers it; output streams; tool calls
// show compactly; memory notes print as notes. Same runner and storage as the bot.
import { createInterface } from 'node:readline';
import type { Agent } from '../../core/agent.js';
import type { AgentEvent, EventBus } from '../../core/events.js';
import { mainDocumentPath } from '../../core/init-messages.js';
import type { Stores, ThreadAddress } from '../../core/store.js';

export interface ConsoleChatOptions {
  agent: Agent;
  stores: Stores;
  events: EventBus;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** The thread this terminal talks in (one session). */
  address: ThreadAddress;
  userName: string;
}

const help = 'Type a message to talk or steer. Commands: /pause /resume /reset /status /memory /quit';

/** Runs the chat until /quit or end of input; resolves when the agent is idle again. */
export async function runConsoleChat(options: ConsoleChatOptions): Promise<void> {
  const { agent, output } = options;
  const write = (text: string) => output.write(text);
  let streaming = false;
  const endStream = () => {
    if (streaming) write('\n');
    streaming = false;
  };
  const unsubscribe = options.events.subscribe((event) => {
    if (event.session.threadKey !== options.address.threadKey || event.session.platform !== 'console') return;
    render(event);
    // Shown on the terminal: not owed any more.
    if (event.type === 'answer' || event.type === 'memory-updated' || event.type === 'context-reset') void agent.delivered(event);
  });
  let counter = Date.now();

  function render(event: AgentEvent): void {
    switch (event.type) {
      case 'text-delta':
        if (!streaming) write('hippo> ');
        streaming = true;
        write(event.delta);
        break;
      case 'assistant-message':
        endStream();
        break;
      case 'tool-call-start':
        endStream();
        write(`  ⚙ ${event.call.function.name} ${truncate(event.call.function.arguments, 80)}\n`);
        break;
      case 'tool-call-end':
        write(`  ${event.ok ? '✓' : '✗'} ${truncate(event.result.replace(/\s+/g, ' '), 100)}\n`);
        break;
      case 'memory-updated':
        endStream();
        write(`  🧠 memory updated · ${event.changes.map((change) => `${change.path} +${change.added} −${change.removed}`).join(' · ')}\n`);
        break;
      case 'context-reset':
        endStream();
        write(`  ♻️ context reset · ${Math.round(event.tokensBefore / 1000)}k → ${Math.round(event.tokensAfter / 1000)}k tokens · ${event.carriedMessages} messages carried over\n`);
        break;
      case 'memory-run-failed':
        write(`  ⚠ ${event.role} failed: ${event.error}\n`);
        break;
      case 'paused':
        endStream();
        write('  ⏸ paused (/resume to continue)\n');
        break;
      case 'resumed':
        write('  ▶ resumed\n');
        break;
      case 'error':
        endStream();
        write(`  ✗ ${event.error.message} (/resume to try again)\n`);
        break;
      default:
        break;
    }
  }

  async function sessionId(): Promise<string | undefined> {
    return (await agent.findSession(options.address))?.id;
  }

  async function command(line: string): Promise<boolean> {
    const [verb] = line.slice(1).trim().split(/\s+/);
    const id = await sessionId();
    if (verb === 'quit' || verb === 'exit') return false;
    if (!id && verb !== 'help') {
      write('  (no session yet: type a message first)\n');
      return true;
    }
    switch (verb) {
      case 'pause':
        await agent.pause(id!);
        break;
      case 'resume':
        await agent.resume(id!);
        break;
      case 'reset':
        write((await agent.reset(id!)) ? '  ♻️ reset requested\n' : '  (a reset is already pending)\n');
        break;
      case 'status': {
        const status = await agent.status(id!);
        const usage = status.usage;
        write(
          `  state ${status.state} · context ${status.contextPercent}% (${status.contextTokens} tokens, segment ${status.segmentOrdinal}) · queued ${status.queued}\n` +
            `  tokens worker ${usage.worker.promptTokens}/${usage.worker.completionTokens} · summarizer ${usage.summarizer.promptTokens}/${usage.summarizer.completionTokens} · decider ${usage.decider.promptTokens}/${usage.decider.completionTokens} (prompt/completion) · cache ${Math.round(status.cacheRatio * 100)}%\n`,
        );
        break;
      }
      case 'memory': {
        const session = (await agent.findSession(options.address))!;
        const documents = await options.stores.documents.list(session.memorySpaceId, session.id);
        const main = documents.find((document) => document.path === mainDocumentPath);
        write(`--- ${mainDocumentPath} (v${main?.version ?? 0}) ---\n${main?.content ?? '(empty)'}\n--- documents ---\n`);
        write(`${documents.map((document) => `  ${document.path}  v${document.version}`).join('\n')}\n`);
        break;
      }
      default:
        write(`  ${help}\n`);
    }
    return true;
  }

  write(`${help}\n`);
  const lines = createInterface({ input: options.input, terminal: false });
  for await (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('/')) {
      if (!(await command(line))) break;
      continue;
    }
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
  // End of input: let the current run finish before leaving.
  const id = await sessionId();
  if (id) await (await agent.runner(id)).whenIdle();
  endStream();
  unsubscribe();
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}
