// The run's checklist on Discord's status card (Discord has no task cards): the TODO.md plan with
// ticks, then the latest tool calls with their state (⏳ running, ✅ done, ❌ failed, ⏹️ cut short),
// the tool and what it is about. One embed, far inside Discord's limits (4,096 characters of
// description). Plan lines, tool names and arguments are model-written: they are shown literally
// (Markdown, links and mentions escaped or inside code), never as formatting or a ping.
import type { APIEmbed } from 'discord.js';
import type { CallEntry, CallState, Plan, TaskList } from '../chat/task-list.js';
import { oneLine } from '../chat/task-list.js';

/** Discord's limit on an embed's description (characters). */
export const embedDescriptionLimit = 4_096;
/** Tool calls shown (the latest); earlier ones are counted. */
export const shownCalls = 8;
/** Plan lines shown, around the first open one. */
export const shownPlanItems = 10;
/** Characters shown of a plan line, a tool name and a call's detail. */
const planChars = 80;
const toolChars = 40;
const detailChars = 60;
/** Accent colour of the checklist (the notes' soft purple). */
const checklistColour = 0x8e7cc3;

const stateMarks: Record<CallState, string> = { running: '⏳', done: '✅', failed: '❌', stopped: '⏹️' };

/** The checklist embed, or null while the run has neither calls nor a plan. */
export function taskChecklistEmbed(tasks: TaskList): APIEmbed | null {
  const lines = [...(tasks.plan ? planLines(tasks.plan) : []), ...(tasks.total > 0 ? callLines(tasks) : [])];
  if (lines.length === 0) return null;
  return { description: fitLines(lines, embedDescriptionLimit), color: checklistColour };
}

function planLines(plan: Plan): string[] {
  const total = plan.items.length + plan.more;
  const title = `**📋 ${plan.title ? literal(oneLine(plan.title, planChars)) : 'Plan'}**${total > 0 ? ` · ${plan.done}/${total} done` : ''}`;
  // A long plan shows its first open line with a little of what came before it.
  const firstOpen = plan.items.findIndex((item) => !item.done);
  const start = Math.max(0, Math.min((firstOpen < 0 ? plan.items.length : firstOpen) - 2, plan.items.length - shownPlanItems));
  const shown = plan.items.slice(start, start + shownPlanItems);
  const after = plan.items.length - start - shown.length + plan.more;
  return [
    title,
    ...(start > 0 ? [`… ${start} above`] : []),
    ...shown.map((item) => `${item.done ? '☑️' : '⬜'} ${literal(oneLine(item.text, planChars))}`),
    ...(after > 0 ? [`… ${after} more`] : []),
    '',
  ];
}

function callLines(tasks: TaskList): string[] {
  const shown = tasks.calls.slice(-shownCalls);
  const earlier = tasks.total - shown.length;
  return [
    `**🔧 Tool calls** · ${tasks.total}`,
    ...(earlier > 0 ? [`+${earlier} more`] : []),
    ...shown.map(callLine),
  ];
}

function callLine(call: CallEntry): string {
  const detail = call.detail === '' ? '' : ` · ${code(oneLine(call.detail, detailChars))}`;
  return `${stateMarks[call.state]} ${code(oneLine(call.tool, toolChars))}${detail}`;
}

/**
 * Text shown as it is: Markdown, mentions (<@…>, @everyone), custom emoji and links are
 * backslash-escaped (Discord drops the backslash before punctuation and shows the character).
 */
export function literal(text: string): string {
  return text.replace(/[\\`*_~|<>[\]()#@:]/g, '\\$&');
}

/** Inline code (nothing inside is formatting or a mention); its own backticks become primes. */
function code(text: string): string {
  return `\`${text.replace(/`/g, 'ˋ') || ' '}\``;
}

/** The lines joined, whole lines only, within `limit` characters (a last line says what was left out). */
function fitLines(lines: string[], limit: number): string {
  const text = lines.join('\n').trim();
  if (text.length <= limit) return text;
  const kept: string[] = [];
  let length = 0;
  for (const line of lines) {
    if (length + line.length + 1 > limit - 20) break;
    kept.push(line);
    length += line.length + 1;
  }
  return `${kept.join('\n')}\n… (shortened)`;
}
