import { describe, expect, it } from 'vitest';
import { markdownToMrkdwn } from '../../src/adapters/chat/markdown-to-mrkdwn.js';

describe('markdownToMrkdwn', () => {
  it('converts bold, italic, strike-through and links', () => {
    expect(markdownToMrkdwn('**bold** and *italic* and ~~gone~~ and [docs](https://example.com/a)')).toBe(
      '*bold* and _italic_ and ~gone~ and <https://example.com/a|docs>',
    );
  });

  it('turns headings into bold lines and keeps lists', () => {
    expect(markdownToMrkdwn('# Plan\n- first\n  - nested\n1. one\n- [x] done')).toBe('*Plan*\n• first\n  • nested\n1. one\n☑ done');
  });

  it('keeps code verbatim, drops the language tag and leaves inline code alone', () => {
    const markdown = 'Use `**not bold**`:\n```ts\nconst a = x ** 2; // *keep*\n```';
    expect(markdownToMrkdwn(markdown)).toBe('Use `**not bold**`:\n```\nconst a = x ** 2; // *keep*\n```');
  });

  it('escapes &, < and > outside links', () => {
    expect(markdownToMrkdwn('a < b && c > d, see <https://x.io>')).toBe('a &lt; b &amp;&amp; c &gt; d, see <https://x.io>');
  });

  it('renders a table as an aligned code block', () => {
    const markdown = ['Results:', '', '| Name | Score |', '|------|------:|', '| **Ada** | 10 |', '| Bob | 7 |', '', 'Done.'].join('\n');
    expect(markdownToMrkdwn(markdown)).toBe(
      ['Results:', '', '```', 'Name | Score', '-----+------', 'Ada  | 10', 'Bob  | 7', '```', '', 'Done.'].join('\n'),
    );
  });

  it('leaves snake_case words and lone asterisks alone', () => {
    expect(markdownToMrkdwn('call my_function_name with 2 * 3')).toBe('call my_function_name with 2 * 3');
  });
});
