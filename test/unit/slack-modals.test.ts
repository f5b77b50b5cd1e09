import { describe, expect, it } from 'vitest';
import type { DocumentDiff } from '../../src/adapters/chat/notes.js';
import { memoryChangeModal } from '../../src/adapters/slack/modals.js';
import { homeBlocks } from '../../src/adapters/slack/app-home/app-home.js';

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

describe('homeBlocks', () => {
  const summary = (spaceId: string, index: number) => ({
    document: { id: `${spaceId}-d${index}`, spaceId, sessionKey: '', path: `notes/${index}.md`, version: 1, content: 'x', deleted: false, pinnedLines: [], updatedAt: new Date(0) },
    lastChange: { version: 1, author: { kind: 'system' as const }, reason: '', createdAt: new Date(0) },
  });
  const space = (index: number) => ({ id: `s${index}`, platform: 'slack' as const, workspaceId: 'T1', scope: 'channel' as const, channelId: `C${index}` });

  it('gives every space it shows Search and Export, within 100 blocks, and names the spaces left out', () => {
    const spaces = Array.from({ length: 30 }, (_unused, index) => ({ space: space(index), entries: Array.from({ length: 12 }, (_unused2, doc) => summary(`s${index}`, doc)) }));
    const blocks = homeBlocks(spaces) as unknown as Block[];
    expect(blocks.length).toBeLessThanOrEqual(100);
    const actions = blocks.filter((block) => block.type === 'actions');
    const shown = actions.map((block) => block.elements?.map((element) => [element.action_id, JSON.parse(element.value) as { s: string }]));
    expect(shown.length).toBeGreaterThan(0);
    for (const [index, row] of shown.entries()) expect(row).toEqual([['hippo_home_search', { s: `s${index}` }], ['hippo_home_export', { s: `s${index}` }]]);
    const note = blocks.at(-1) as unknown as { elements: Array<{ text: string }> };
    expect(note.elements[0]?.text).toContain(`${30 - shown.length} more memory spaces not shown here`);
  });
});
