import { describe, expect, it } from 'vitest';
import { DiscordAPIError, MessageFlags } from 'discord.js';
import { PermanentPlatformError } from '../../src/adapters/chat/outbox-sender.js';
import { startRunStatus } from '../../src/adapters/chat/run-status.js';
import { nonceOf, toPlatformError } from '../../src/adapters/discord/deliver.js';
import { memoryNoteBody, memoryNoteComponents, resetNoteBody, statusCardBody, streamBody, textBodies } from '../../src/adapters/discord/message-views.js';
import { applyTaskEvent, parsePlan, startTaskList, type TaskList } from '../../src/adapters/chat/task-list.js';
import { literal } from '../../src/adapters/discord/task-checklist.js';
import type { AgentEvent } from '../../src/core/events.js';
import { PlatformError } from '../../src/core/errors.js';
import type { SessionRecord } from '../../src/core/store.js';

const session: SessionRecord = {
  id: 's1', platform: 'discord', workspaceId: 'G', channelId: 'C', threadKey: 'T', memorySpaceId: 'm', title: 't',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
};

type Row = { components: Array<{ label?: string; custom_id?: string; disabled?: boolean; emoji?: { name?: string } }> };
const labels = (components: unknown) => (components as Row[]).flatMap((row) => row.components.map((button) => button.label ?? button.emoji?.name));

describe('Discord rendering', () => {
  it('splits text at 2,000 characters and never lets model text ping anyone', () => {
    const bodies = textBodies(`${'word '.repeat(300)}\n\n${'more '.repeat(300)}`);
    expect(bodies.length).toBe(2);
    for (const body of bodies) {
      expect(String(body.content).length).toBeLessThanOrEqual(2000);
      expect(body.allowed_mentions).toEqual({ parse: [] });
    }
    expect(textBodies('')[0]?.content).toBe('(empty answer)');
  });

  it('suppresses link embeds on answers unless LINK_PREVIEWS is on', () => {
    expect(textBodies('see https://evil.example/?d=secret')[0]?.flags).toBe(MessageFlags.SuppressEmbeds);
    expect(streamBody('see https://evil.example', true).flags).toBe(MessageFlags.SuppressEmbeds);
    expect(textBodies('see https://example.com', true)[0]?.flags).toBeUndefined();
    expect(streamBody('see https://example.com', false, true).flags).toBeUndefined();
    expect(textBodies('x', true)[0]?.allowed_mentions).toEqual({ parse: [] });
  });

  it('shows Pause and Stop while a run works and Resume when it is paused or stopped', () => {
    const working = statusCardBody('s1', startRunStatus(0), 12_000);
    expect(working.content).toBe('🤔 Thinking · 12s');
    expect(labels(working.components)).toEqual(['Pause', 'Stop']);
    const stopped = statusCardBody('s1', { ...startRunStatus(0), phase: 'halted', stoppedBy: 'Ada', endedAt: 5_000 }, 9_000);
    expect(stopped.content).toBe('⏹️ Stopped by Ada; a reply or Resume continues · 5s');
    expect(labels(stopped.components)).toEqual(['Resume']);
    const paused = statusCardBody('s1', { ...startRunStatus(0), phase: 'paused', endedAt: 5_000 }, 9_000);
    expect(paused.content).toBe('⏸️ Paused · 5s');
    expect(labels(paused.components)).toEqual(['Resume']);
    const done = statusCardBody('s1', { ...startRunStatus(0), phase: 'done', endedAt: 5_000 }, 9_000);
    expect(done.components).toEqual([]);
  });

  it('renders a memory note as one embed line with View, Edit, Revert and 👍', () => {
    const body = memoryNoteBody({
      type: 'memory-updated', session, memoryRunId: 'r1', round: 1,
      changes: [{ documentId: 'd', path: 'MAIN.md', version: 2, previousVersion: 1, added: 8, removed: 2, deleted: false }],
      usage: { promptTokens: 100, cachedTokens: 50, completionTokens: 1 },
    });
    expect(body.embeds?.[0]?.description).toBe('🧠 Memory updated · MAIN.md +8 −2 · cache 50%');
    expect(labels(body.components)).toEqual(['View', 'Edit', 'Revert', '👍']);
    const done = memoryNoteComponents('s1', 'r1', { revertedBy: 'Ada', reviewedBy: 'Bob' });
    expect(labels(done)).toEqual(['View', 'Edit', 'Reverted by Ada', 'Bob']);
    // Edit stays: the document can still be edited after its change was reverted.
    expect((done as Row[])[0]?.components.slice(2).every((button) => button.disabled)).toBe(true);
  });

  it('renders a reset note with a button to view the memory', () => {
    const body = resetNoteBody({ type: 'context-reset', session, segmentId: 'g', segmentOrdinal: 2, tokensBefore: 118_000, tokensAfter: 14_200, carriedMessages: 6, memoryCostUsd: null });
    expect(body.embeds?.[0]?.description).toBe('♻️ Context reset · 118k → 14k tokens · 6 messages carried over');
    expect(labels(body.components)).toEqual(['View memory']);
  });
});

describe('Discord run checklist', () => {
  const call = (id: string, name: string, args: unknown) => ({ id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } });
  const calls = (count: number, name: string, args: unknown, ok = true): AgentEvent[] => Array.from({ length: count }, (_unused, index) => {
    const id = `${name}-${index}`;
    return [{ type: 'tool-call-start', session, call: call(id, name, args) }, { type: 'tool-call-end', session, call: call(id, name, args), ok, result: '' }] as AgentEvent[];
  }).flat();
  const description = (tasks: TaskList) => String(statusCardBody('s1', startRunStatus(0), 1_000, tasks).embeds?.[0]?.description ?? '');
  /** What Discord shows for escaped text: the backslash before punctuation is dropped. */
  const shown = (text: string) => text.replace(/\\([^0-9A-Za-z\s])/g, '$1');

  it('adds no checklist before the first call or plan, and keeps the status line as the content', () => {
    const body = statusCardBody('s1', startRunStatus(0), 12_000, startTaskList());
    expect(body.content).toBe('🤔 Thinking · 12s');
    expect(body.embeds).toEqual([]);
  });

  it('shows the plan with ticks, then the latest 8 calls with their state and "+k more"', () => {
    let tasks = startTaskList(parsePlan('# Ship it\n- [x] read the notes\n- [ ] write the migration'));
    for (const event of [
      ...calls(7, 'memory_list', {}),
      ...calls(1, 'memory_read', { path: 'NOPE.md' }, false),
      { type: 'tool-call-start', session, call: call('w', 'web_fetch', { url: 'https://example.com/a' }) } as AgentEvent,
    ]) tasks = applyTaskEvent(tasks, event);
    expect(description(tasks)).toBe([
      '**📋 Ship it** · 1/2 done',
      '☑️ read the notes',
      '⬜ write the migration',
      '',
      '**🔧 Tool calls** · 9',
      '+1 more',
      ...Array.from({ length: 6 }, () => '✅ `memory_list`'),
      '❌ `memory_read` · `NOPE.md`',
      '⏳ `web_fetch` · `https://example.com/a`',
    ].join('\n'));
  });

  it('shows model text literally: no formatting, links or mentions, and code stays code', () => {
    const hostile = 'Hi <@123> @everyone **now** [here](https://evil.example) `x` ||s|| <:e:1>';
    expect(shown(literal(hostile))).toBe(hostile);
    expect(literal(hostile)).not.toMatch(/(^|[^\\])[<@*[`|]/);
    let tasks = startTaskList(parsePlan(`# ${hostile}\n- [ ] ${hostile}`));
    tasks = applyTaskEvent(tasks, { type: 'tool-call-start', session, call: call('c', 'shell', { command: 'echo `id` <@123>' }) });
    const text = description(tasks);
    expect(text).toContain('⏳ `shell` · `echo ˋidˋ <@123>`');
    expect(text.split('\n').filter((line) => line.startsWith('⬜')).map(shown)).toEqual([`⬜ ${hostile}`]);
    expect(statusCardBody('s1', startRunStatus(0), 1_000, tasks).allowed_mentions).toEqual({ parse: [] });
  });

  it('stays within Discord\'s embed limits for a 2 MiB TODO.md and calls of any size', () => {
    const line = `- [ ] ${'<@1>*_`'.repeat(40_000)}`;
    let tasks = startTaskList(parsePlan(`# ${'#'.repeat(100_000)}\n${Array.from({ length: 9 }, () => line).join('\n')}`.slice(0, 2 * 1024 * 1024)));
    const long = { path: '`*<'.repeat(6_000) };
    for (const event of calls(500, 'x'.repeat(10_000), long)) tasks = applyTaskEvent(tasks, event);
    const text = description(tasks);
    expect(text.length).toBeLessThanOrEqual(4_096);
    expect(text).toContain('+492 more');
    const lines = text.split('\n');
    expect(lines.filter((entry) => entry.startsWith('✅'))).toHaveLength(8);
    for (const entry of lines) expect(entry.length).toBeLessThanOrEqual(400);
  });

  it('shows a long plan around its first open line', () => {
    const todo = Array.from({ length: 30 }, (_unused, index) => `- [${index < 14 ? 'x' : ' '}] step ${index + 1}`).join('\n');
    const text = description(startTaskList(parsePlan(todo)));
    expect(text.split('\n')).toEqual([
      // Of the 20 lines kept, the last 10 hold the first open one (step 15).
      '**📋 Plan** · 14/30 done', '… 10 above',
      ...Array.from({ length: 10 }, (_unused, index) => `${index < 4 ? '☑️' : '⬜'} step ${index + 11}`),
      '… 10 more',
    ]);
  });
});

describe('Discord delivery errors', () => {
  const apiError = (status: number, code: number, extra: Record<string, unknown> = {}) =>
    new DiscordAPIError({ message: 'nope', code, ...extra }, code, status, 'POST', 'https://discord.test/api/v10/x', { body: undefined, files: undefined });

  it('fails refusals at once and retries rate limits and server errors', () => {
    expect(toPlatformError('post', apiError(403, 50013))).toBeInstanceOf(PermanentPlatformError);
    expect(toPlatformError('post', apiError(404, 10003))).toBeInstanceOf(PermanentPlatformError);
    const limited = toPlatformError('post', apiError(429, 0, { retry_after: 1.5 }));
    expect(limited).not.toBeInstanceOf(PermanentPlatformError);
    expect(limited.retryAfterMs).toBe(1500);
    expect(toPlatformError('post', apiError(502, 0))).not.toBeInstanceOf(PermanentPlatformError);
    expect(toPlatformError('post', new Error('socket hang up'))).toBeInstanceOf(PlatformError);
  });

  it('derives a stable nonce of at most 25 characters from the idempotency key', () => {
    expect(nonceOf('discord:answer:a:1')).toBe(nonceOf('discord:answer:a:1'));
    expect(nonceOf('discord:answer:a:1')).not.toBe(nonceOf('discord:answer:a:2'));
    expect(nonceOf('x').length).toBeLessThanOrEqual(25);
  });
});
