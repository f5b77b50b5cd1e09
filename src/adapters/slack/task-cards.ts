// Tool calls and the TODO.md plan as Slack's structured stream chunks (`task_update`,
// `plan_update`): each call is a card titled by its tool and main argument, in progress while it
// runs, then complete or failed with a short output; TODO.md lines are the plan's tasks.
// Everything shown is cut to a bound: arguments and results are untrusted text of any size, shown
// as the tool's own words (without the wrapper the model reads them in) and as text only (Slack's
// `<…>` syntax escaped: a result cannot ping or dress up a link, slack-text.ts). What a
// call is about and how TODO.md reads are shared with Discord's checklist (chat/task-list.ts).
import type { AgentEvent } from '../../core/events.js';
import type { ToolCall } from '../../core/messages.js';
import { callArguments, callSubject, oneLine, parsePlan, planTool, todoContent, toolResultText } from '../chat/task-list.js';
import type { Json } from './message-views.js';
import { slackText } from './slack-text.js';

export { planTool, todoContent } from '../chat/task-list.js';

/** How Slack lays out the task cards (chat.startStream `task_display_mode`). */
export type TaskDisplayMode = 'timeline' | 'plan';
export type TaskStatus = 'pending' | 'in_progress' | 'complete' | 'error';
export type Chunk = { [key: string]: Json };

/** Longest card title and output (characters). */
const titleChars = 80;
const outputChars = 200;
/** Most TODO.md lines shown as plan tasks. */
const planTasks = 20;

/** A tool call's card: started (in progress) or ended (complete/error with its output). */
export function taskChunk(call: ToolCall, status: TaskStatus, result?: string): Chunk {
  const main = callSubject(call);
  const chunk: Chunk = { type: 'task_update', id: call.id, title: slackText(oneLine(main ? `${call.function.name}: ${main}` : call.function.name, titleChars)), status };
  const output = result === undefined ? '' : toolResultText(result, outputChars);
  if (output !== '') chunk['output'] = slackText(output);
  const url = call.function.name === 'web_fetch' ? callArguments(call)['url'] : undefined;
  if (typeof url === 'string' && /^https?:\/\//i.test(url)) chunk['sources'] = [{ type: 'url', url: url.slice(0, 2_000), text: slackText(oneLine(url, titleChars)) }];
  return chunk;
}

/** TODO.md as the plan: its title, then one task per checklist line ("- [ ]" pending, "- [x]" complete). */
export function planChunks(todo: string): Chunk[] {
  const plan = parsePlan(todo, planTasks);
  const chunks: Chunk[] = [{ type: 'plan_update', title: slackText(oneLine(plan.title ?? 'Plan', titleChars)) }];
  // Ids by position: a later TODO write updates the same cards instead of adding new ones.
  for (const [index, item] of plan.items.entries()) {
    chunks.push({ type: 'task_update', id: `plan-${index + 1}`, title: slackText(oneLine(item.text, titleChars)), status: item.done ? 'complete' : 'pending' });
  }
  return chunks;
}

/** The chunks a tool call's start or end adds to the run's task stream (a TODO.md write: the plan). */
export function eventChunks(event: Extract<AgentEvent, { type: 'tool-call-start' | 'tool-call-end' }>): Chunk[] {
  const { call } = event;
  if (event.type === 'tool-call-start') return call.function.name === planTool ? [] : [taskChunk(call, 'in_progress')];
  const todo = call.function.name === planTool && event.ok ? todoContent(call) : null;
  if (todo !== null) return planChunks(todo);
  return [taskChunk(call, event.ok ? 'complete' : 'error', event.result)];
}
