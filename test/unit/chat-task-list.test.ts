// A run's tool calls and TODO.md plan folded from agent events: what both platforms show.
import { describe, expect, it } from 'vitest';
import { applyTaskEvent, parsePlan, startTaskList, type TaskList } from '../../src/adapters/chat/task-list.js';
import type { AgentEvent } from '../../src/core/events.js';
import type { SessionRecord } from '../../src/core/store.js';

const session: SessionRecord = {
  id: 's1', platform: 'discord', workspaceId: 'G', channelId: 'C', threadKey: 'T', memorySpaceId: 'm', title: 't',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
};
const call = (id: string, name: string, args: unknown) => ({ id, type: 'function' as const, function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } });
const start = (id: string, name: string, args: unknown = {}): AgentEvent => ({ type: 'tool-call-start', session, call: call(id, name, args) });
const end = (id: string, name: string, args: unknown = {}, ok = true): AgentEvent => ({ type: 'tool-call-end', session, call: call(id, name, args), ok, result: 'r' });
const fold = (events: AgentEvent[], list: TaskList = startTaskList()) => events.reduce(applyTaskEvent, list);

describe('task list', () => {
  it('follows each call from running to done or failed, with its main argument as detail', () => {
    const list = fold([start('a', 'web_fetch', { url: 'https://example.com/a' }), end('a', 'web_fetch', { url: 'https://example.com/a' }), start('b', 'memory_read', { path: 'NOPE.md' }), end('b', 'memory_read', { path: 'NOPE.md' }, false), start('c', 'slow_step')]);
    expect(list.calls).toEqual([
      { id: 'a', tool: 'web_fetch', detail: 'https://example.com/a', state: 'done' },
      { id: 'b', tool: 'memory_read', detail: 'NOPE.md', state: 'failed' },
      { id: 'c', tool: 'slow_step', detail: '', state: 'running' },
    ]);
    expect(list.total).toBe(3);
    // The run ended (Stop, an error): what still ran was cut short.
    const ended = applyTaskEvent(list, { type: 'run-end', session, reason: 'stopped', stoppedBy: 'Ada' });
    expect(ended.calls.map((entry) => entry.state)).toEqual(['done', 'failed', 'stopped']);
    expect(applyTaskEvent(ended, { type: 'run-end', session, reason: 'idle' })).toBe(ended);
  });

  it('shows a TODO.md write as the plan, not as a call; a failed one as a failed call', () => {
    const todo = '# Ship it\nprose\n- [x] read the notes\n* [ ] write the migration\n- [X] tag';
    const list = fold([start('t', 'todo_write', { content: todo }), end('t', 'todo_write', { content: todo })]);
    expect(list.calls).toEqual([]);
    expect(list.plan).toEqual({ title: 'Ship it', items: [{ text: 'read the notes', done: true }, { text: 'write the migration', done: false }, { text: 'tag', done: true }], more: 0, done: 2 });
    const failed = fold([start('u', 'todo_write', { content: 'x' }), end('u', 'todo_write', { content: 'x' }, false)], list);
    expect(failed.plan).toBe(list.plan);
    expect(failed.calls).toEqual([{ id: 'u', tool: 'todo_write', detail: '', state: 'failed' }]);
  });

  it('keeps the latest 20 calls and counts the rest, whatever the size of their arguments', () => {
    const huge = JSON.stringify({ path: 'x'.repeat(2 * 1024 * 1024) });
    const events = Array.from({ length: 50 }, (_unused, index) => [start(`c${index}`, 'memory_read', huge), end(`c${index}`, 'memory_read', huge)]).flat();
    const list = fold(events);
    expect(list.total).toBe(50);
    expect(list.calls).toHaveLength(20);
    expect(list.calls[0]?.id).toBe('c30');
    // Arguments over 20,000 characters are not read: no detail.
    expect(list.calls.every((entry) => entry.detail === '' && entry.state === 'done')).toBe(true);
  });

  it('reads only the start of a plan of any length and keeps 20 lines of at most 200 characters', () => {
    const todo = `# ${'T'.repeat(5_000)}\n${Array.from({ length: 6_000 }, (_unused, index) => `- [${index % 3 === 0 ? 'x' : ' '}] step ${index} ${'y'.repeat(300)}`).join('\n')}`;
    const plan = parsePlan(todo);
    expect(plan.items).toHaveLength(20);
    expect(plan.items.every((item) => item.text.length <= 200)).toBe(true);
    expect(plan.title?.length).toBeLessThanOrEqual(200);
    // Only the first 20,000 characters are read.
    expect(plan.items.length + plan.more).toBeLessThan(100);
  });
});
