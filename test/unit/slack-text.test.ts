// Model text on its way to Slack (adapters/slack/slack-text.ts, chat/link-host.ts, the mrkdwn
// fallback): Slack's `<…>` syntax and entities arrive as text, look-alike links show their real
// host, and the work stays linear on 2 MiB of the worst input.
import { describe, expect, it } from 'vitest';
import { realHostNote } from '../../src/adapters/chat/link-host.js';
import { markdownToMrkdwn } from '../../src/adapters/chat/markdown-to-mrkdwn.js';
import { startRunStatus } from '../../src/adapters/chat/run-status.js';
import { toolResultText } from '../../src/adapters/chat/task-list.js';
import { runCard } from '../../src/adapters/slack/message-views.js';
import { slackAnswerParts, slackMarkdown, slackMarkdownChars, slackText } from '../../src/adapters/slack/slack-text.js';
import { splitMessage } from '../../src/adapters/chat/split-message.js';
import { taskChunk } from '../../src/adapters/slack/task-cards.js';
import { untrustedToolOutput } from '../../src/core/loop/tool-executor.js';

const mib2 = 2 * 1024 * 1024;
const call = (name: string, args: unknown) => ({ id: 'c1', type: 'function' as const, function: { name, arguments: JSON.stringify(args) } });

describe('Slack text', () => {
  it('escapes every mention, link and entity Slack would parse, in Markdown and plain fields', () => {
    const hostile = 'Hi <!channel> <!here> <@U123> <#C1> <!subteam^S1> &lt;!everyone&gt; <https://evil.example|https://slack.com/help>';
    const escaped = 'Hi &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;#C1&gt; &lt;!subteam^S1&gt; &amp;lt;!everyone&amp;gt; &lt;https://evil.example|https://slack.com/help&gt;';
    expect(slackText(hostile)).toBe(escaped);
    expect(slackMarkdown(hostile)).toBe(escaped);
    expect(slackMarkdown(hostile)).not.toMatch(/<|&(?!amp;|lt;|gt;)/);
  });

  it("keeps Markdown's quote markers and everything else as written", () => {
    expect(slackMarkdown('> quoted <b>\n> > nested\n  > indented\nx > y\n    > code')).toBe('> quoted &lt;b&gt;\n> > nested\n  > indented\nx &gt; y\n    &gt; code');
    expect(slackMarkdown('**bold** _it_ `a < b` [docs](https://example.com/docs)')).toBe('**bold** _it_ `a &lt; b` [docs](https://example.com/docs)');
  });

  it('shows the real host beside a link whose text reads as another address', () => {
    expect(slackMarkdown('see [https://slack.com/help](https://evil.example/x?d=secret)')).toBe('see [https://slack.com/help](https://evil.example/x?d=secret) (evil.example)');
    expect(slackMarkdown('[**slack.com**](https://slack.com.evil.example)')).toBe('[**slack.com**](https://slack.com.evil.example) (slack.com.evil.example)');
    expect(slackMarkdown('[www.example.com/a](https://example.com/b) [the docs](https://evil.example)')).toBe('[www.example.com/a](https://example.com/b) [the docs](https://evil.example)');
    expect(realHostNote('https://slack.com', 'javascript:alert(1)')).toBe(' (javascript:alert(1))');
    expect(realHostNote('example.com', 'https://EXAMPLE.com/')).toBe('');
    expect(realHostNote('WWW.Example.COM/docs', 'https://example.com/docs')).toBe('');
  });

  it('is prefix-stable: a longer stream text starts with the shorter one as sent', () => {
    const full = 'Read [https://slack.com/help](https://evil.example/p) & <!here>\n> quote\nend';
    for (let cut = 0; cut <= full.length; cut += 1) expect(slackMarkdown(full).startsWith(slackMarkdown(full.slice(0, cut)))).toBe(true);
  });

  it('converts the mrkdwn fallback without a label on an autolink and with the real host of look-alikes', () => {
    expect(markdownToMrkdwn('<https://evil.example|https://slack.com/help> <!channel>')).toBe('&lt;https://evil.example|https://slack.com/help&gt; &lt;!channel&gt;');
    expect(markdownToMrkdwn('[https://slack.com/help](https://evil.example/x)')).toBe('<https://evil.example/x|https://slack.com/help> (evil.example)');
    expect(markdownToMrkdwn('[x](https://a.example/<!channel>)')).toBe('<https://a.example/%3C!channel%3E|x>');
  });

  it("escapes the status card's notification text too (a tool name is the model's word)", () => {
    const status = { ...startRunStatus(0), phase: 'tool' as const, tool: '<!channel>', toolCalls: 1 };
    const card = runCard(status, 's1', 1_000);
    expect(card.text).toContain('&lt;!channel&gt;');
    expect(JSON.stringify(card)).not.toContain('<!channel>');
  });

  it('shows a tool result without the wrapper the model reads it in, as text', () => {
    const wrapped = untrustedToolOutput('web_fetch', 'Page says <!channel> and </tool-output> here');
    expect(toolResultText(wrapped, 200)).toBe('Page says <!channel> and </tool-output> here');
    expect(toolResultText(`Error: ${'x'.repeat(5_000)}`, 200)).toHaveLength(200);
    const failed = taskChunk(call('web_fetch', { url: 'https://a.example' }), 'error', untrustedToolOutput('web_fetch', 'Error: <@U1> 404'));
    expect(failed['output']).toBe('Error: &lt;@U1&gt; 404');
    const long = taskChunk(call('shell', { command: 'ls' }), 'complete', untrustedToolOutput('shell', 'y'.repeat(10_000)));
    expect(long['output']).toBe(`${'y'.repeat(199)}…`);
  });

  it('handles 2 MiB of the worst input in one linear pass', () => {
    const inputs = ['<'.repeat(mib2), '['.repeat(mib2), '[a]('.repeat(mib2 / 4), '](x "'.repeat(mib2 / 5), '\n>'.repeat(mib2 / 2), '[https://a.b](https://c.d)'.repeat(mib2 / 26)];
    for (const input of inputs) {
      const out = slackMarkdown(input);
      expect(out).not.toContain('<');
      expect(slackText(input)).not.toContain('<');
    }
    expect(slackMarkdown('[https://a.b](https://c.d)'.repeat(1_000)).match(/\(c\.d\)/g)).toHaveLength(1_000);
    expect(toolResultText(`<tool-output tool="x">\n${'<'.repeat(mib2)}`, 200)).toHaveLength(200);
  });

  it("cuts an answer into parts of Slack's size, and smaller where escaping would take one past 12,000 characters", () => {
    const prose = 'word '.repeat(1_400);
    expect(slackAnswerParts(prose, 3_000)).toEqual(splitMessage(prose, { limit: 3_000 }));
    const hostile = ['&'.repeat(2_990), '<&'.repeat(1_450), '[a.b](&&&&&&&&&&&&)\n'.repeat(140), `${'&'.repeat(2_500)}\n\n${'x'.repeat(2_000)}`];
    for (const text of hostile) {
      const parts = slackAnswerParts(text, 3_000);
      expect(splitMessage(text, { limit: 3_000 }).some((part) => slackMarkdown(part).length > slackMarkdownChars)).toBe(true);
      expect(parts.length).toBeGreaterThan(1);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(3_000);
        expect(slackMarkdown(part).length).toBeLessThanOrEqual(slackMarkdownChars);
      }
    }
    // Cut no smaller than it must: at half the size when that is enough.
    expect(slackAnswerParts('&'.repeat(2_990), 3_000)).toEqual(splitMessage('&'.repeat(2_990), { limit: 1_500 }));
  });
});
