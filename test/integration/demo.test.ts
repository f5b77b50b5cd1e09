// `npm run demo`: the real service against the fake Slack and a local fake model, with scripted
// people; the account it prints and the page it writes show each surface a team sees.
import { parseDocument } from 'htmlparser2';
import { describe, expect, it } from 'vitest';
import { accountHtml, accountText, demoSurfaces } from '../../scripts/demo/demo-account.js';
import { runDemo } from '../../scripts/demo/run-demo.js';
import { createTestDatabase } from '../support/database.js';

describe('npm run demo', () => {
  it('shows the status card, task cards, streamed answer, memory note with its buttons and App Home, as text and as a page', async () => {
    const database = await createTestDatabase();
    try {
      const surfaces = demoSurfaces(await runDemo({ databaseUrl: database.url }));
      // Hippo's surfaces in order; when Ben's reply lands among them depends on timing.
      expect(surfaces.filter((surface) => surface.kind !== 'person').map((surface) => surface.kind)).toEqual(['status card', 'task cards', 'streamed answer', 'reply', 'memory note', 'App Home']);
      expect(surfaces.filter((surface) => surface.kind === 'person').map((surface) => `${surface.who}: ${surface.markdown ?? ''}`)).toEqual([
        'Ada: @hippo draft the release notes for v2.0', 'Ben: please mention the new memory export command', 'Ada: @hippo remember releases ship on Tuesdays', "Ada: opens Hippo's App Home",
      ]);
      const text = accountText(surfaces, false);
      expect(text).toMatch(/── Hippo · status card ─+\nwhile it worked:\n {2}🤔 Thinking · 0s .*\n {2}\[Pause\] \[Stop\]\nwhen it ended:\n✅ Done · /);
      expect(text).toMatch(/── Hippo · task cards ─+\n▤ Plan: Release notes v2\.0\n✓ collect the merged changes\n○ draft the notes\n✓ write_file: release-notes\.md {2}→ Created release-notes\.md/);
      // The answer read Ben's steer, and its Markdown is rendered (no raw markers).
      expect(text).toMatch(/── Hippo · streamed answer ─+\nRelease notes v2\.0\n\n• Memory export: memory export sends/);
      expect(text).toMatch(/\n\[👍\] \[👎\]\n\(the same stream as the tasks: [2-9]\d* writes, the answer last\)/);
      // What Slack received escaped (&amp; &lt; &gt;) reads as the characters the model wrote.
      expect(text).toContain('Safe text: Q&A, <b>tags</b> and <!here> in an answer stay text');
      expect(text).toMatch(/── Hippo · memory note ─+\n🧠 Memory updated · MAIN\.md \+1 −0 .*Ada asked to remember “releases ship on Tuesdays”\n\[View\] \[Edit\] \[Revert\]/);
      expect(text).toMatch(/── Hippo · App Home ─+\n🧠 Hippo memory\n[\s\S]*\[🔎 Search\] \[📦 Export as zip\]\nMAIN\.md · .* by background memory/);
      expect(text).not.toContain('**');

      const page = parseDocument(accountHtml(surfaces));
      const all = (node: { children?: unknown[] }): Array<{ name?: string; attribs?: Record<string, string>; children?: unknown[]; data?: string }> =>
        (node.children ?? []).flatMap((child) => [child as never, ...all(child as { children?: unknown[] })]);
      const textOf = (node: { children?: unknown[]; data?: string }): string => node.data ?? (node.children ?? []).map((child) => textOf(child as never)).join('');
      const surfacesOnPage = all(page).filter((node) => node.attribs?.['data-surface']);
      expect(surfacesOnPage.map((node) => node.attribs?.['data-surface'])).toEqual(['status card', 'task cards', 'streamed answer', 'reply', 'memory note', 'App Home']);
      const buttons = (surface: string) => all(surfacesOnPage.find((node) => node.attribs?.['data-surface'] === surface)!).filter((node) => node.name === 'button').map(textOf);
      expect(buttons('status card')).toEqual(['Pause', 'Stop']);
      expect(buttons('memory note').slice(0, 3)).toEqual(['View', 'Edit', 'Revert']);
      expect(buttons('App Home')).toContain('📦 Export as zip');
      const answer = surfacesOnPage.find((node) => node.attribs?.['data-surface'] === 'streamed answer')!;
      expect(textOf(answer)).toContain('Memory export: memory export sends the memory as a zip');
      // The answer ends with its feedback buttons; the model's tags and entities are text, once escaped.
      expect(buttons('streamed answer')).toEqual(['👍', '👎']);
      expect(textOf(answer)).toContain('Safe text: Q&A, <b>tags</b> and <!here> in an answer stay text');
      expect(all(answer).filter((node) => node.name === 'b').map(textOf)).toEqual(['Memory export', 'Terminal chat', 'Safe text']);
    } finally {
      await database.drop();
    }
  }, 180_000);
});
