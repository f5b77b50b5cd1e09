// Markdown for the terminal chat: styles on a terminal, plain text elsewhere, the same whether the
// text comes whole or in streamed pieces, control characters never passed through, bounded work.
import { describe, expect, it } from 'vitest';
import { ansiStyles, plainStyles, renderMarkdown, TerminalMarkdown, terminalSafe } from '../../src/adapters/console/terminal-markdown.js';

const sample = [
  '# Release plan',
  'Ship **on Tuesday** with *care*; run `npm test` first (see [the docs](https://example.com/docs)).',
  '- check snake_case_names stay as written',
  '* and 2 * 3 * 4 stays arithmetic',
  '> quoted',
  '```sh',
  'echo "**not bold**"',
  '```',
  'Done.',
].join('\n');

describe('terminal Markdown', () => {
  it('renders headings, emphasis, code, lists, quotes and links as plain text without markers', () => {
    expect(renderMarkdown(sample, plainStyles)).toBe([
      'Release plan',
      'Ship on Tuesday with care; run npm test first (see the docs (https://example.com/docs)).',
      '• check snake_case_names stay as written',
      '• and 2 * 3 * 4 stays arithmetic',
      '│ quoted',
      '  echo "**not bold**"',
      'Done.',
    ].join('\n'));
  });

  it('styles them with ANSI codes on a terminal, closing every style it opens', () => {
    const out = renderMarkdown(sample, ansiStyles);
    expect(out).toContain('\x1b[1;4mRelease plan\x1b[22;24m\n');
    expect(out).toContain('Ship \x1b[1mon Tuesday\x1b[22m with \x1b[3mcare\x1b[23m; run \x1b[36mnpm test\x1b[39m first');
    expect(out).toContain('the docs \x1b[2m(https://example.com/docs)\x1b[22m');
    expect(out).toContain('  \x1b[36mecho "**not bold**"\x1b[39m\n');
    expect(out).not.toContain('**on');
    // An unclosed marker does not bleed into the next line.
    expect(renderMarkdown('**open\nnext', ansiStyles)).toBe('\x1b[1mopen\x1b[22m\nnext');
  });

  it('gives the same output for any split of the text into streamed pieces', () => {
    for (const styles of [plainStyles, ansiStyles]) {
      const whole = renderMarkdown(sample, styles);
      for (const size of [1, 2, 3, 5, 8, 13]) {
        const renderer = new TerminalMarkdown(styles);
        let out = '';
        for (let index = 0; index < sample.length; index += size) out += renderer.write(sample.slice(index, index + size));
        expect(out + renderer.end()).toBe(whole);
      }
    }
  });

  it('replaces control characters and bidirectional overrides, keeping tabs and line ends', () => {
    expect(terminalSafe('a\x1b]52;c;aGk=\x07b\x1b[2K\rc\td\u202ee\x9bf\n')).toBe('a\uFFFD]52;c;aGk=\uFFFDb\uFFFD[2Kc\td\uFFFDe\uFFFDf\n');
    const out = renderMarkdown('**x\x1b]0;title\x07**', ansiStyles);
    expect(out).not.toMatch(/\x1b\]|\x07/);
    const stream = new TerminalMarkdown(ansiStyles);
    expect(stream.write('a\x1b') + stream.write('[2J') + stream.end()).toBe('a\uFFFD[2J');
  });

  it('renders 2 MiB of worst-case markers in one pass (each a bounded look-ahead)', () => {
    const size = 2 << 20;
    for (const unit of ['[', '*a', '_', '`', '[a](', '```\n', '\\', `[${'a'.repeat(499)}`, '# x\n', '- ']) {
      const text = unit.repeat(Math.ceil(size / unit.length));
      const renderer = new TerminalMarkdown(ansiStyles);
      let out = '';
      for (let index = 0; index < text.length; index += 4096) out += renderer.write(text.slice(index, index + 4096));
      out += renderer.end();
      expect(out.length).toBeLessThan(text.length * 8);
    }
  });
});
