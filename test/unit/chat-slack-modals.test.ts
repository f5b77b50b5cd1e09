import { describe, expect, it } from 'vitest';
import type { DocumentDiff } from '../../src/adapters/chat/notes.js';
import { memoryChangeModal } from '../../src/adapters/slack/modals.js';

interface Block { type: string; text?: { text: string }; elements?: Array<{ action_id: string; value: string }> }
interface View { type: string; title: { text: string }; blocks: Block[] }

const bigDiff = (path: string): DocumentDiff => {
  const lines = Array.from({ length: 400 }, (_unused, index) => `line ${index} of ${path}: ${'words '.repeat(15)}`);
  return {
    documentId: path, path, previousVersion: 3, version: 4, added: 400, removed: 0, deleted: false,
    diff: lines.map((line) => `+ ${line}`).join('\n'), content: lines.join('\n'),
  };
};

describe('memoryChangeModal', () => {
  it('pages a large change within Slack modal limits with previous and next buttons', () => {
    const diffs = [bigDiff('MAIN.md'), bigDiff('projects/a.md')];
    const first = memoryChangeModal('run-1', diffs, 0) as unknown as View;
    const next = first.blocks.at(-1)?.elements?.find((element) => element.action_id === 'hippo_view_page_next');
    expect(next).toBeDefined();
    const pageRef = JSON.parse(next?.value ?? '{}') as { page: number; ref: string };
    expect(pageRef).toEqual({ kind: 'memory', ref: 'run-1', page: 1 });
    const pages = Number(/ 1\/(\d+)$/.exec(first.title.text)?.[1]);
    expect(pages).toBeGreaterThan(2);
    let lines = 0;
    for (let page = 0; page < pages; page += 1) {
      const view = memoryChangeModal('run-1', diffs, page) as unknown as View;
      expect(view.title.text.length).toBeLessThanOrEqual(24);
      expect(view.blocks.length).toBeLessThanOrEqual(100);
      for (const block of view.blocks) {
        const text = block.text?.text ?? '';
        expect(text.length).toBeLessThanOrEqual(3_000);
        if (block.type === 'section') expect((text.match(/```/g) ?? []).length % 2).toBe(0);
        lines += (text.match(/^\+ line \d+ of MAIN\.md/gm) ?? []).length;
      }
      const actions = view.blocks.at(-1)?.elements?.map((element) => element.action_id) ?? [];
      expect(actions.includes('hippo_view_page_previous')).toBe(page > 0);
      expect(actions.includes('hippo_view_page_next')).toBe(page < pages - 1);
    }
    // Every diff line of MAIN.md appears exactly once across the pages.
    expect(lines).toBe(400);
  });
});
