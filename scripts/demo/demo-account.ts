// What a team would have seen in the demo, from what Slack received: the thread in order (the
// people's messages, the status card with its buttons and how it ended, the task cards, the streamed
// answer, the memory note with its buttons) and App Home. As text for the terminal, and as an HTML
// page drawn from the recorded Block Kit (a sketch of Slack's look, not a copy of it).
import { ansiStyles, plainStyles, renderMarkdown } from '../../src/adapters/console/terminal-markdown.js';
import type { SlackCall } from '../../test/fakes/fake-slack-api.js';
import type { DemoRecording } from './run-demo.js';

/** Block Kit as recorded (only the fields drawn here). */
interface Block {
  type: string;
  block_id?: string;
  text?: { type?: string; text?: string } | string;
  fields?: Array<{ text?: string }>;
  elements?: Array<Element>;
  accessory?: Element;
}

interface Element {
  type: string;
  text?: { text?: string } | string;
  action_id?: string;
  style?: string;
  elements?: Array<{ text?: string }>;
  positive_button?: { text?: { text?: string }; accessibility_label?: string };
  negative_button?: { text?: { text?: string }; accessibility_label?: string };
}

/** One task card: its title, last status and output. */
interface Task {
  id: string;
  title: string;
  status: string;
  output?: string;
}

/** One thing in the thread (or App Home), in the order the team saw it appear. */
export interface Surface {
  kind: 'person' | 'status card' | 'task cards' | 'streamed answer' | 'reply' | 'memory note' | 'App Home';
  who: string;
  /** Where it appeared among Slack's calls. */
  at: number;
  /** A line about how it behaved ("updated 4 times, then …"). */
  note?: string;
  blocks?: Block[];
  /** Blocks of its first state (the status card while working). */
  firstBlocks?: Block[];
  markdown?: string;
  tasks?: Task[];
}

/** The thread and App Home, in order. */
export function demoSurfaces(recording: DemoRecording): Surface[] {
  const { calls } = recording;
  const surfaces: Surface[] = recording.people.map((step) => ({ kind: 'person', who: step.who, at: step.at, markdown: step.what }));
  for (const message of recording.thread) {
    const created = calls.findIndex((call) => (call.method === 'chat.postMessage' || call.method === 'chat.startStream') && call.response?.['ts'] === message.ts);
    const updates = calls.filter((call) => call.method === 'chat.update' && call.args['ts'] === message.ts);
    const key = String(message.metadata?.event_payload?.['idempotency_key'] ?? '');
    const blocks = (message.blocks as Block[] | undefined) ?? [];
    if (calls[created]?.method === 'chat.startStream') {
      const streamCalls = calls.filter((call) => /^chat\.(start|append|stop)Stream$/.test(call.method) && (call.args['ts'] ?? call.response?.['ts']) === message.ts);
      const tasks = taskCards(streamCalls);
      if (tasks.length > 0) surfaces.push({ kind: 'task cards', who: 'Hippo', at: created, tasks, note: `a stream of ${streamCalls.length} writes` });
      // Text streams word by word; a tool run's tasks and its answer share one stream, the answer last.
      const writes = streamCalls.filter((call) => typeof call.args['markdown_text'] === 'string').length;
      const note = tasks.length > 0 ? `the same stream as the tasks: ${streamCalls.length} writes, the answer last` : `streamed in ${writes} writes as the model wrote it`;
      // The stream's stop adds the feedback buttons under the answer.
      if (message.markdown_text) surfaces.push({ kind: 'streamed answer', who: 'Hippo', at: created + 0.5, markdown: unslack(message.markdown_text), blocks, note });
    } else if (key.startsWith('card:') || hasAction(firstBlocks(calls[created]), /^hippo_(pause|stop)$/)) {
      surfaces.push({ kind: 'status card', who: 'Hippo', at: created, blocks, firstBlocks: firstBlocks(calls[created]), note: `updated ${updates.length} times in place while it worked` });
    } else if (blocks.some((block) => block.block_id === 'hippo_memory_note') || hasAction(blocks, /^hippo_memory_/)) {
      surfaces.push({ kind: 'memory note', who: 'Hippo', at: created, blocks });
    } else {
      surfaces.push({ kind: 'reply', who: 'Hippo', at: created, blocks, markdown: unslack(message.markdown_text ?? message.text ?? '') });
    }
  }
  const home = calls.filter((call) => call.method === 'views.publish').at(-1);
  if (home) surfaces.push({ kind: 'App Home', who: 'Hippo', at: calls.indexOf(home), blocks: ((home.args['view'] as { blocks?: Block[] } | undefined)?.blocks) ?? [] });
  return surfaces.sort((left, right) => left.at - right.at);
}

/** The account as text; `color` styles it for a terminal. */
export function accountText(surfaces: readonly Surface[], color: boolean): string {
  const styles = color ? ansiStyles : plainStyles;
  const lines: string[] = [];
  for (const surface of surfaces) {
    const title = surface.kind === 'person' ? `${surface.who}` : `Hippo · ${surface.kind}`;
    lines.push('', `${styles.bold[0]}── ${title} ${'─'.repeat(Math.max(2, 60 - title.length))}${styles.bold[1]}`);
    if (surface.firstBlocks) lines.push('while it worked:', ...blocksText(surface.firstBlocks, color).map((line) => `  ${line}`), 'when it ended:');
    if (surface.tasks) lines.push(...surface.tasks.map((task) => `${taskIcon(task.status)} ${task.title}${task.output ? `  → ${task.output}` : ''}`));
    if (surface.markdown && !holdsText(surface.blocks)) lines.push(renderMarkdown(surface.markdown, styles).replace(/\n$/, ''));
    if (surface.blocks) lines.push(...blocksText(surface.blocks, color));
    if (surface.note) lines.push(`${styles.dim[0]}(${surface.note})${styles.dim[1]}`);
  }
  return lines.join('\n').trimStart();
}

/** Block Kit as lines of text: sections, headers, context, buttons as [Label]. */
function blocksText(blocks: readonly Block[], color: boolean): string[] {
  const styles = color ? ansiStyles : plainStyles;
  return blocks.flatMap((block): string[] => {
    switch (block.type) {
      case 'header':
        return [`${styles.heading[0]}${plain(block.text)}${styles.heading[1]}`];
      case 'section': {
        const text = mrkdwnToMarkdown(plain(block.text));
        const fields = (block.fields ?? []).map((field) => mrkdwnToMarkdown(field.text ?? '')).join('   ');
        const accessory = block.accessory ? `  ${elementText(block.accessory)}` : '';
        return [renderMarkdown(`${text}${fields ? `\n${fields}` : ''}`, styles).replace(/\n$/, '') + accessory];
      }
      case 'markdown':
        return [renderMarkdown(unslack(plain(block.text)), styles).replace(/\n$/, '')];
      case 'context_actions':
        return [(block.elements ?? []).map(elementText).join(' ')];
      case 'context':
        return [`${styles.dim[0]}${(block.elements ?? []).map((element) => mrkdwnToMarkdown(plain(element.text))).join(' · ')}${styles.dim[1]}`];
      case 'actions':
        return [(block.elements ?? []).map(elementText).join(' ')];
      case 'divider':
        return ['─'.repeat(40)];
      case 'rich_text':
        return [(block.elements ?? []).flatMap((element) => (element.elements ?? []).map((part) => part.text ?? '')).join('')];
      default:
        return [`(${block.type})`];
    }
  });
}

function elementText(element: Element): string {
  if (element.type === 'button') return `[${plain(element.text)}]`;
  if (element.type === 'overflow') return '[⋯]';
  if (element.type === 'feedback_buttons') return `[${element.positive_button?.text?.text ?? '👍'}] [${element.negative_button?.text?.text ?? '👎'}]`;
  return `[${element.type}]`;
}

/** The account as an HTML page. */
export function accountHtml(surfaces: readonly Surface[], title = 'Hippo demo: what the team sees in Slack'): string {
  const items = surfaces.map((surface) => {
    if (surface.kind === 'person') return `<div class="msg"><div class="who">${escapeHtml(surface.who)}</div><div class="body">${escapeHtml(surface.markdown ?? '')}</div></div>`;
    const parts: string[] = [];
    if (surface.firstBlocks) parts.push(`<div class="phase">while it worked</div>${blocksHtml(surface.firstBlocks)}<div class="phase">when it ended</div>`);
    if (surface.tasks) parts.push(`<ul class="tasks">${surface.tasks.map((task) => `<li class="${escapeHtml(task.status)}"><span class="icon">${taskIcon(task.status)}</span> ${escapeHtml(task.title)}${task.output ? `<div class="output">${escapeHtml(task.output)}</div>` : ''}</li>`).join('')}</ul>`);
    if (surface.markdown && !holdsText(surface.blocks)) parts.push(`<div class="markdown">${markdownHtml(surface.markdown)}</div>`);
    if (surface.blocks) parts.push(blocksHtml(surface.blocks));
    if (surface.note) parts.push(`<div class="note">${escapeHtml(surface.note)}</div>`);
    const kind = surface.kind.replace(/\s+/g, '-').toLowerCase();
    return `<div class="msg bot ${kind}" data-surface="${escapeHtml(surface.kind)}"><div class="who">Hippo <span class="app">APP</span> <span class="kind">${escapeHtml(surface.kind)}</span></div><div class="body">${parts.join('')}</div></div>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>
body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji"; color: #1d1c1d; max-width: 780px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.3em; } .msg { border-left: 3px solid #ddd; padding: .4em .8em; margin: .8em 0; }
.msg.bot { border-color: #611f69; background: #fafafa; } .who { font-weight: 700; } .app { font-size: .7em; background: #ddd; padding: 0 .3em; border-radius: 3px; }
.kind { font-weight: 400; color: #616061; font-size: .85em; } .note, .phase, .context { color: #616061; font-size: .85em; }
button { font: inherit; font-size: .85em; font-weight: 700; border: 1px solid #bbb; background: #fff; border-radius: 4px; padding: .15em .7em; margin: .2em .3em .2em 0; }
button.danger { color: #e01e5a; border-color: #e01e5a; } button.primary { color: #fff; background: #007a5a; border-color: #007a5a; }
ul.tasks { list-style: none; padding: 0; } ul.tasks .output { color: #616061; font-size: .85em; margin-left: 1.6em; }
code { background: #f3f3f3; padding: 0 .2em; border-radius: 3px; } pre { background: #f3f3f3; padding: .5em; } hr { border: 0; border-top: 1px solid #ddd; }
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p class="note">Recorded from the real service against the project's fake Slack and a local fake model (<code>npm run demo</code>); no account and no network were used.</p>
${items.join('\n')}
</body></html>
`;
}

function blocksHtml(blocks: readonly Block[]): string {
  return blocks.map((block): string => {
    switch (block.type) {
      case 'header':
        return `<h3>${escapeHtml(plain(block.text))}</h3>`;
      case 'section': {
        const fields = (block.fields ?? []).map((field) => `<div>${mrkdwnHtml(field.text ?? '')}</div>`).join('');
        return `<div class="section">${mrkdwnHtml(plain(block.text))}${fields}${block.accessory ? ` ${elementHtml(block.accessory)}` : ''}</div>`;
      }
      case 'markdown':
        return `<div class="markdown">${markdownHtml(unslack(plain(block.text)))}</div>`;
      case 'context_actions':
        return `<div class="actions">${(block.elements ?? []).map(elementHtml).join('')}</div>`;
      case 'context':
        return `<div class="context">${(block.elements ?? []).map((element) => mrkdwnHtml(plain(element.text))).join(' · ')}</div>`;
      case 'actions':
        return `<div class="actions">${(block.elements ?? []).map(elementHtml).join('')}</div>`;
      case 'divider':
        return '<hr>';
      default:
        return `<div class="context">(${escapeHtml(block.type)})</div>`;
    }
  }).join('\n');
}

function elementHtml(element: Element): string {
  if (element.type === 'button') return `<button class="${escapeHtml(element.style ?? '')}" data-action="${escapeHtml(element.action_id ?? '')}">${escapeHtml(plain(element.text))}</button>`;
  if (element.type === 'overflow') return '<button data-action="overflow">⋯</button>';
  if (element.type === 'feedback_buttons') {
    return [element.positive_button, element.negative_button].map((button) => `<button class="feedback" data-action="${escapeHtml(element.action_id ?? '')}" aria-label="${escapeHtml(button?.accessibility_label ?? '')}">${escapeHtml(button?.text?.text ?? '')}</button>`).join('');
  }
  return `<button>${escapeHtml(element.type)}</button>`;
}

/** Slack mrkdwn (*bold*, _italic_, `code`, <url|text>) as HTML. */
function mrkdwnHtml(text: string): string {
  return inlineHtml(mrkdwnToMarkdown(text)).replace(/\n/g, '<br>');
}

/** Markdown (headings, lists, paragraphs, inline marks) as HTML. */
function markdownHtml(text: string): string {
  const out: string[] = [];
  let list = false;
  for (const line of text.split('\n')) {
    const item = /^\s*[-*•] (.*)$/.exec(line);
    if (item && !list) out.push('<ul>');
    if (!item && list) out.push('</ul>');
    list = Boolean(item);
    const heading = /^(#{1,6}) (.*)$/.exec(line);
    if (item) out.push(`<li>${inlineHtml(item[1] ?? '')}</li>`);
    else if (heading) out.push(`<h4>${inlineHtml(heading[2] ?? '')}</h4>`);
    else if (line.trim() !== '') out.push(`<p>${inlineHtml(line)}</p>`);
  }
  if (list) out.push('</ul>');
  return out.join('');
}

/** **bold**, *italic*, `code` and [text](url) of one escaped line. */
function inlineHtml(text: string): string {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<b>$1</b>')
    .replace(/(^|\W)[*_]([^*_]+)[*_](?=\W|$)/g, '$1<i>$2</i>')
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2">$1</a>');
}

/** Slack mrkdwn as Markdown: *bold* → **bold**, <url|text> → [text](url), then Slack's entities (&amp; &lt; &gt;) as the characters they stand for. */
function mrkdwnToMarkdown(text: string): string {
  return unslack(text
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=[\s).,:;!?]|$)/g, '$1**$2**')
    .replace(/<(https?:\/\/[^|>\s]+)\|([^>]+)>/g, '[$2]($1)')
    .replace(/<(https?:\/\/[^|>\s]+)>/g, '$1')
    .replace(/<#([A-Z0-9]+)(?:\|([^>]*))?>/g, (_whole, id: string, name?: string) => `#${name || id}`)
    .replace(/<@([A-Z0-9]+)(?:\|([^>]*))?>/g, (_whole, id: string, name?: string) => `@${name || id}`));
}

/** Text as Slack shows it: its three entities (&amp; &lt; &gt;, slack-text.ts) as the characters they stand for. */
function unslack(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_whole, name: string) => ({ amp: '&', lt: '<', gt: '>' })[name] ?? '');
}

/** Blocks that show a message's text themselves (else its Markdown is shown before them). */
function holdsText(blocks: readonly Block[] | undefined): boolean {
  return (blocks ?? []).some((block) => block.type === 'markdown' || block.type === 'section' || block.type === 'header');
}

function plain(text: Block['text'] | Element['text']): string {
  return typeof text === 'string' ? text : (text?.text ?? '');
}

function hasAction(blocks: readonly Block[], pattern: RegExp): boolean {
  return blocks.some((block) => (block.elements ?? []).some((element) => pattern.test(element.action_id ?? '')));
}

function firstBlocks(call: SlackCall | undefined): Block[] {
  return (call?.args['blocks'] as Block[] | undefined) ?? [];
}

/** The task cards of a stream: each id once, in the order first seen, with its last status. */
function taskCards(calls: readonly SlackCall[]): Task[] {
  const tasks = new Map<string, Task>();
  for (const call of calls) {
    for (const chunk of (call.args['chunks'] as Array<Record<string, unknown>> | undefined) ?? []) {
      if (chunk['type'] === 'plan_update') tasks.set(`plan:${String(chunk['title'])}`, { id: 'plan', title: `Plan: ${unslack(String(chunk['title'] ?? ''))}`, status: 'plan' });
      if (chunk['type'] !== 'task_update') continue;
      const id = String(chunk['id']);
      const before = tasks.get(id);
      const output = chunk['output'] === undefined ? before?.output : unslack(String(chunk['output']));
      tasks.set(id, { id, title: unslack(String(chunk['title'] ?? before?.title ?? '')), status: String(chunk['status'] ?? before?.status ?? ''), ...(output ? { output } : {}) });
    }
  }
  return [...tasks.values()];
}

function taskIcon(status: string): string {
  return { complete: '✓', in_progress: '◐', pending: '○', error: '✗', plan: '▤' }[status] ?? '·';
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char);
}
