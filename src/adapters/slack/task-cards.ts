// Tool calls and the TODO.md plan as Slack's structured stream chunks (`task_update`,
// `plan_update`): each call is a card titled by its tool and main argument, in progress while it
// runs, then complete or failed with a short output; TODO.md lines are the plan's tasks.
// Everything shown is cut to a bound: arguments and results are untrusted text of any size.
import type { ToolCall } from '../../core/messages.js';
import type { Json } from './message-views.js';

/** How Slack lays out the task cards (chat.startStream `task_display_mode`). */
export type TaskDisplayMode = 'timeline' | 'plan';
export type TaskStatus = 'pending' | 'in_progress' | 'complete' | 'error';
export type Chunk = { [key: string]: Json };

/** Longest card title, output and argument read (characters). */
const titleChars = 80;
const outputChars = 200;
/** Arguments longer than this are not parsed for a main argument (the tool name alone is the title). */
const argumentsParsed = 20_000;
/** Most TODO.md lines shown as plan tasks. */
const planTasks = 20;
/** Arguments that say what a call is about, most telling first. */
const mainArguments = ['url', 'query', 'path', 'command', 'pattern', 'name'];

/** The tool that writes the plan: shown as the plan, not as a card of its own. */
export const planTool = 'todo_write';

/** A tool call's card: started (in progress) or ended (complete/error with its output). */
export function taskChunk(call: ToolCall, status: TaskStatus, result?: string): Chunk {
  const args = parsedArguments(call);
  const main = mainArgument(args);
  const chunk: Chunk = { type: 'task_update', id: call.id, title: cut(main ? `${call.function.name}: ${main}` : call.function.name, titleChars), status };
  if (result !== undefined && result.trim() !== '') chunk['output'] = cut(result, outputChars);
  const url = call.function.name === 'web_fetch' ? args['url'] : undefined;
  if (typeof url === 'string' && /^https?:\/\//i.test(url)) chunk['sources'] = [{ type: 'url', url: url.slice(0, 2_000), text: cut(url, titleChars) }];
  return chunk;
}

/** TODO.md as the plan: its title, then one task per checklist line ("- [ ]" pending, "- [x]" complete). */
export function planChunks(todo: string): Chunk[] {
  const lines = todo.slice(0, argumentsParsed).split('\n');
  const heading = lines.find((line) => /^#+\s+\S/.test(line));
  const chunks: Chunk[] = [{ type: 'plan_update', title: cut(heading ? heading.replace(/^#+\s+/, '') : 'Plan', titleChars) }];
  let index = 0;
  for (const line of lines) {
    const item = /^\s*[-*]\s+\[([ xX])\]\s+(.+)$/.exec(line);
    if (!item || index >= planTasks) continue;
    index += 1;
    // Ids by position: a later TODO write updates the same cards instead of adding new ones.
    chunks.push({ type: 'task_update', id: `plan-${index}`, title: cut(item[2] ?? '', titleChars), status: item[1] === ' ' ? 'pending' : 'complete' });
  }
  return chunks;
}

/** The TODO text a todo_write call wrote, or null when its arguments cannot be read. */
export function todoContent(call: ToolCall): string | null {
  const content = parsedArguments(call)['content'];
  return typeof content === 'string' ? content : null;
}

function parsedArguments(call: ToolCall): Record<string, unknown> {
  if (call.function.arguments.length > argumentsParsed) return {};
  try {
    const parsed: unknown = JSON.parse(call.function.arguments);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function mainArgument(args: Record<string, unknown>): string | null {
  for (const name of mainArguments) {
    const value = args[name];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return null;
}

/** One line, at most `chars` characters (with an ellipsis when cut). */
function cut(text: string, chars: number): string {
  const line = text.slice(0, chars * 4).replace(/\s+/g, ' ').trim();
  return line.length > chars ? `${line.slice(0, chars - 1)}…` : line;
}
