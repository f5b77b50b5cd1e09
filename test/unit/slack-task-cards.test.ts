// Tool calls and TODO.md as Slack stream chunks: bounded titles and outputs, fetched URLs as sources.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { planChunks, taskChunk } from '../../src/adapters/slack/task-cards.js';

const call = (name: string, args: unknown, id = 'call_1') => ({ id, type: 'function' as const, function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } });

describe('task cards', () => {
  it('titles a call by its tool and main argument, bounded, and cites a fetched URL', () => {
    const url = 'https://example.com/notes';
    expect(taskChunk(call('web_fetch', { url }), 'complete', 'fetched')).toEqual({
      type: 'task_update', id: 'call_1', title: `web_fetch: ${url}`, status: 'complete', output: 'fetched', sources: [{ type: 'url', url, text: url }],
    });
    const long = taskChunk(call('shell', { command: `echo ${'x'.repeat(5_000)}\nrm -rf` }), 'error', 'y'.repeat(10_000));
    expect(String(long['title']).length).toBeLessThanOrEqual(80);
    expect(String(long['output']).length).toBeLessThanOrEqual(200);
    expect(long['sources']).toBeUndefined();
  });

  it('falls back to the tool name on arguments it cannot read, and cites only http(s) addresses', () => {
    expect(taskChunk(call('memory_list', '{not json'), 'in_progress')).toEqual({ type: 'task_update', id: 'call_1', title: 'memory_list', status: 'in_progress' });
    expect(taskChunk(call('web_fetch', { url: 'javascript:alert(1)' }), 'complete')['sources']).toBeUndefined();
  });

  it('reads TODO.md as a plan: its heading, then its checklist lines with stable ids', () => {
    expect(planChunks('# Ship\nsome prose\n- [x] read\n* [ ] tag it\n- not a task')).toEqual([
      { type: 'plan_update', title: 'Ship' },
      { type: 'task_update', id: 'plan-1', title: 'read', status: 'complete' },
      { type: 'task_update', id: 'plan-2', title: 'tag it', status: 'pending' },
    ]);
    expect(planChunks(Array.from({ length: 500 }, (_unused, index) => `- [ ] step ${index}`).join('\n'))).toHaveLength(21);
  });

  it('SLACK_TASK_DISPLAY is timeline by default, plan on request, and refuses anything else', () => {
    const base = { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' };
    const parsed = (env: Record<string, string>) => parseConfig({ ...base, ...env });
    const ok = parsed({});
    expect(ok.ok && ok.config.SLACK_TASK_DISPLAY).toBe('timeline');
    const plan = parsed({ SLACK_TASK_DISPLAY: 'plan' });
    expect(plan.ok && plan.config.SLACK_TASK_DISPLAY).toBe('plan');
    const bad = parsed({ SLACK_TASK_DISPLAY: 'cards' });
    expect(bad.ok).toBe(false);
    expect(bad.ok ? '' : bad.errors.join('\n')).toContain('SLACK_TASK_DISPLAY');
  });
});
