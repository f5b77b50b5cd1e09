import { describe, expect, it } from 'vitest';
import { applyRunEvent, isActive, isResumable, isStoppable, runIndicatorText, runStatusLine, startRunStatus } from '../../src/adapters/chat/run-status.js';
import { applyTaskEvent, startTaskList } from '../../src/adapters/chat/task-list.js';
import type { AgentEvent } from '../../src/core/events.js';
import type { SessionRecord } from '../../src/core/store.js';

const session: SessionRecord = {
  id: 's1', platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: '1.0', memorySpaceId: 'm1', title: 't',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
};
const call = { id: 'c1', type: 'function' as const, function: { name: 'web_fetch', arguments: '{}' } };

describe('run status', () => {
  it('follows a run through a tool call to done', () => {
    let status = startRunStatus(0);
    expect(runStatusLine(status, 2_000)).toBe('🤔 Thinking · 2s');
    status = applyRunEvent(status, { type: 'tool-call-start', session, call }, 3_000);
    expect(runStatusLine(status, 4_000)).toBe('🔧 Running tool `web_fetch` · 4s · 1 tool call');
    expect(runIndicatorText(status)).toBe('is running web_fetch…');
    status = applyRunEvent(status, { type: 'tool-call-end', session, call, ok: true, result: '' }, 5_000);
    expect(status.phase).toBe('thinking');
    status = applyRunEvent(status, { type: 'run-end', session, reason: 'idle' }, 65_000);
    expect(runStatusLine({ ...status, contextPercent: 12 }, 99_000)).toBe('✅ Done · 1m 05s · 1 tool call · context 12%');
    expect(isActive(status)).toBe(false);
  });

  it('counts tool calls as the checklist does: a TODO.md write is the plan, a failed one a call', () => {
    const todo = (id: string, args: string) => ({ id, type: 'function' as const, function: { name: 'todo_write', arguments: args } });
    const calls = [todo('p1', JSON.stringify({ content: '- [ ] a' })), call, todo('p2', '{"content": 7}'), todo('p3', JSON.stringify({ content: '- [x] a' }))];
    const ok = [true, true, true, false];
    const events: AgentEvent[] = calls.flatMap((each, index) => [
      { type: 'tool-call-start', session, call: each } as const,
      { type: 'tool-call-end', session, call: each, ok: ok[index] ?? true, result: '' } as const,
    ]);
    const status = events.reduce((folded, event) => applyRunEvent(folded, event, 1_000), startRunStatus(0));
    const list = events.reduce(applyTaskEvent, startTaskList());
    expect(list.total).toBe(3);
    expect(status.toolCalls).toBe(list.total);
    expect(runStatusLine(status, 1_000)).toBe('🤔 Thinking · 1s · 3 tool calls');
  });

  it('waits for a checkpoint, then shows paused and offers resume', () => {
    let status = startRunStatus(0);
    const events: AgentEvent[] = [{ type: 'pause-requested', session }];
    for (const event of events) status = applyRunEvent(status, event, 1_000);
    expect(status.phase).toBe('waiting');
    status = applyRunEvent(status, { type: 'paused', session }, 2_000);
    status = applyRunEvent(status, { type: 'run-end', session, reason: 'paused' }, 2_500);
    expect(status.phase).toBe('paused');
    expect(isResumable(status)).toBe(true);
    expect(applyRunEvent(status, { type: 'resumed', session }, 3_000).phase).toBe('resumed');
  });

  it('says a run paused at the step limit (R21) and offers resume', () => {
    let status = applyRunEvent(startRunStatus(0), { type: 'paused', session }, 1_000);
    status = applyRunEvent(status, { type: 'run-end', session, reason: 'step-limit' }, 1_500);
    expect(runStatusLine(status, 9_000)).toBe('⏸️ Paused at the step limit; a reply or Resume continues · 1s');
    expect(isResumable(status)).toBe(true);
    expect(isStoppable(status)).toBe(false);
    expect(applyRunEvent(status, { type: 'resumed', session }, 3_000).phase).toBe('resumed');
  });

  it('shows who stopped a run: stopping at once, then stopped until a reply or resume', () => {
    let status = applyRunEvent(startRunStatus(0), { type: 'stop-requested', session, by: 'Ada' }, 1_000);
    expect(runStatusLine(status, 1_500)).toBe('⏹️ Stopping (Ada pressed Stop)… · 2s');
    expect(isStoppable(status)).toBe(false);
    status = applyRunEvent(status, { type: 'run-end', session, reason: 'stopped', stoppedBy: 'Ada' }, 2_000);
    expect(status.phase).toBe('halted');
    expect(isResumable(status)).toBe(true);
    expect(isStoppable(startRunStatus(0))).toBe(true);
    // Said on another replica: the run-end alone names who stopped it.
    expect(runStatusLine(applyRunEvent(startRunStatus(0), { type: 'run-end', session, reason: 'stopped', stoppedBy: 'Grace' }, 3_000), 4_000)).toMatch(/^⏹️ Stopped by Grace/);
  });

  it("names the error's kind, never its text (a provider's message can quote a secret)", () => {
    const status = applyRunEvent(startRunStatus(0), { type: 'error', session, error: { code: 'model', message: 'bad key sk-live-123', retryable: true } }, 1_000);
    expect(runStatusLine(status, 5_000)).toBe('❌ Error: an error of the model endpoint (details are in the service log) · 1s');
  });
});
