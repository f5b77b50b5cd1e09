// A run's tool calls and the TODO.md plan, folded from agent events (docs/style.md §8): what Slack
// streams as task cards and plan chunks and Discord shows as a checklist on the status card. Pure,
// so both platforms read the same calls and plan. Arguments, results and TODO.md are model-written
// text of any size: only a bounded prefix of each is ever read, and what is kept is bounded too.
import type { AgentEvent } from '../../core/events.js';
import type { ToolCall } from '../../core/messages.js';
import { unescapeClosingTags } from '../../core/wrappers.js';

/** The tool that writes the plan: shown as the plan, not as a call of its own. */
export const planTool = 'todo_write';

/** Where a call stands; 'stopped': the run ended while it ran (Stop, an error, a restart). */
export type CallState = 'running' | 'done' | 'failed' | 'stopped';

/** One tool call as shown: its tool, what it is about (its main argument), its state. */
export interface CallEntry {
  id: string;
  tool: string;
  /** The main argument (a URL, a path, a query…), one line; '' when none can be read. */
  detail: string;
  state: CallState;
}

/** One checklist line of TODO.md. */
export interface PlanItem {
  text: string;
  done: boolean;
}

/** TODO.md as a plan: its first heading (or null), and its first checklist lines. */
export interface Plan {
  title: string | null;
  items: PlanItem[];
  /** Checklist lines beyond `items`. */
  more: number;
  /** Checklist lines ticked, of all of them (kept or not). */
  done: number;
}

/** The calls of one run (the latest `keptCalls`) and the session's current plan. */
export interface TaskList {
  calls: CallEntry[];
  /** Calls of the run so far, kept or not. */
  total: number;
  plan: Plan | null;
}

/** Calls kept per run (the oldest are only counted); more than any platform shows. */
const keptCalls = 20;
/** Characters of arguments and TODO.md read at most; longer arguments give no main argument. */
export const argumentsRead = 20_000;
/** Plan lines kept. */
const planItems = 20;
/** Longest tool name and detail kept (characters). */
const toolChars = 64;
const detailChars = 200;
/** Arguments that say what a call is about, most telling first. */
const mainArguments = ['url', 'query', 'path', 'command', 'pattern', 'name'];

/** A run's first task list; the plan of the session's previous run stays current. */
export function startTaskList(plan: Plan | null = null): TaskList {
  return { calls: [], total: 0, plan };
}

/** The list after an event; unchanged (same object) when the event does not concern it. */
export function applyTaskEvent(list: TaskList, event: AgentEvent): TaskList {
  switch (event.type) {
    case 'tool-call-start':
      return event.call.function.name === planTool ? list : addCall(list, event.call);
    case 'tool-call-end': {
      const todo = event.call.function.name === planTool && event.ok ? todoContent(event.call) : null;
      if (todo !== null) return { ...list, plan: parsePlan(todo) };
      const state: CallState = event.ok ? 'done' : 'failed';
      // A failed TODO.md write had no start entry: it shows as a failed call.
      const known = list.calls.some((entry) => entry.id === event.call.id);
      const base = known ? list : addCall(list, event.call);
      return { ...base, calls: base.calls.map((entry) => (entry.id === event.call.id ? { ...entry, state } : entry)) };
    }
    case 'error':
    case 'run-end':
      return list.calls.some((entry) => entry.state === 'running')
        ? { ...list, calls: list.calls.map((entry) => (entry.state === 'running' ? { ...entry, state: 'stopped' } : entry)) }
        : list;
    default:
      return list;
  }
}

function addCall(list: TaskList, call: ToolCall): TaskList {
  const entry: CallEntry = { id: call.id, tool: oneLine(call.function.name, toolChars), detail: oneLine(callSubject(call) ?? '', detailChars), state: 'running' };
  return { ...list, calls: [...list.calls, entry].slice(-keptCalls), total: list.total + 1 };
}

/** What a call is about: its main argument (untrimmed), or null when none can be read. */
export function callSubject(call: ToolCall): string | null {
  const args = callArguments(call);
  for (const name of mainArguments) {
    const value = args[name];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return null;
}

/** A call's arguments as an object; {} when they are too long or not a JSON object. */
export function callArguments(call: ToolCall): Record<string, unknown> {
  if (call.function.arguments.length > argumentsRead) return {};
  try {
    const parsed: unknown = JSON.parse(call.function.arguments);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The TODO text a todo_write call wrote, or null when its arguments cannot be read. */
export function todoContent(call: ToolCall): string | null {
  const content = callArguments(call)['content'];
  return typeof content === 'string' ? content : null;
}

/** TODO.md as a plan: its first heading, then its checklist lines ("- [ ]" open, "- [x]" done). */
export function parsePlan(todo: string, maxItems = planItems): Plan {
  const lines = todo.slice(0, argumentsRead).split('\n');
  const heading = lines.find((line) => /^#+\s+\S/.test(line));
  const items: PlanItem[] = [];
  let more = 0;
  let done = 0;
  for (const line of lines) {
    const item = /^\s*[-*]\s+\[([ xX])\]\s+(.+)$/.exec(line);
    if (!item) continue;
    if (item[1] !== ' ') done += 1;
    if (items.length >= maxItems) {
      more += 1;
      continue;
    }
    items.push({ text: oneLine(item[2] ?? '', detailChars), done: item[1] !== ' ' });
  }
  return { title: heading ? oneLine(heading.replace(/^#+\s+/, ''), detailChars) : null, items, more, done };
}

/** One line, at most `chars` characters (with an ellipsis when cut); reads 4 × `chars` at most. */
export function oneLine(text: string, chars: number): string {
  const line = text.slice(0, chars * 4).replace(/\s+/g, ' ').trim();
  return line.length > chars ? `${line.slice(0, chars - 1)}…` : line;
}

/** The opening of the element untrusted tool output travels in to the model (tool-executor.ts). */
const outputWrapper = /^<tool-output\b[^>\n]{0,300}>\n?/;

/**
 * What a tool said, as a person reads it: one line of at most `chars` characters, without the
 * `<tool-output …>` element the model reads it in (and the escaping inside it). Reads a bounded prefix.
 */
export function toolResultText(result: string, chars: number): string {
  const head = result.slice(0, chars * 4 + 400);
  const wrapper = outputWrapper.exec(head);
  if (!wrapper) return oneLine(head, chars);
  const inner = head.slice(wrapper[0].length).replace(/\n?<\/tool-output>\s*$/, '');
  return oneLine(unescapeClosingTags(inner), chars);
}
