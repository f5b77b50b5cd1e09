import { describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/adapters/chat/split-message.js';

/** True when every fence opened in the part is closed in it. */
function fencesBalanced(part: string): boolean {
  let open: string | null = null;
  for (const line of part.split('\n')) {
    const match = /^\s*(`{3,}|~{3,})(.*)$/.exec(line);
    if (!match) continue;
    if (open === null) open = match[1] ?? '```';
    else if ((match[2] ?? '').trim() === '') open = null;
  }
  return open === null;
}

const paragraph = (words: number, seed = 'word') => Array.from({ length: words }, (_unused, index) => `${seed}${index}`).join(' ');

describe('splitMessage', () => {
  it('returns a short text unchanged, without a part number', () => {
    expect(splitMessage('hello **world**', { limit: 3000 })).toEqual(['hello **world**']);
  });

  it('respects the limit and numbers the parts', () => {
    const text = Array.from({ length: 12 }, (_unused, index) => paragraph(60, `p${index}w`)).join('\n\n');
    const parts = splitMessage(text, { limit: 1000 });
    expect(parts.length).toBeGreaterThan(1);
    for (const [index, part] of parts.entries()) {
      expect(part.length).toBeLessThanOrEqual(1000);
      expect(part.endsWith(`(${index + 1}/${parts.length})`)).toBe(true);
    }
  });

  it('prefers paragraph boundaries and keeps every word', () => {
    const paragraphs = Array.from({ length: 6 }, (_unused, index) => paragraph(30, `p${index}w`));
    const parts = splitMessage(paragraphs.join('\n\n'), { limit: 500, numbered: false });
    for (const part of parts) {
      // Every part holds whole paragraphs: it starts with a paragraph's first word.
      expect(part).toMatch(/^p\d+w0 /);
    }
    expect(parts.join('\n\n')).toBe(paragraphs.join('\n\n'));
  });

  it('never cuts inside a code block that fits in one part', () => {
    const code = ['```ts', ...Array.from({ length: 20 }, (_unused, index) => `const value${index} = ${index};`), '```'].join('\n');
    const text = [paragraph(120, 'a'), code, paragraph(120, 'b')].join('\n\n');
    const parts = splitMessage(text, { limit: 1200 });
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(1200);
      expect(fencesBalanced(part)).toBe(true);
    }
    expect(parts.some((part) => part.includes(code))).toBe(true);
  });

  it('closes and reopens a code block longer than the limit with its language', () => {
    const body = Array.from({ length: 200 }, (_unused, index) => `print("line ${index}")`);
    const text = `Here is the script:\n\n\`\`\`python\n${body.join('\n')}\n\`\`\`\n\nRun it with python3.`;
    const parts = splitMessage(text, { limit: 1000 });
    expect(parts.length).toBeGreaterThan(3);
    for (const [index, part] of parts.entries()) {
      expect(part.length).toBeLessThanOrEqual(1000);
      expect(fencesBalanced(part)).toBe(true);
      if (index > 0 && index < parts.length - 1) expect(part.startsWith('```python\n')).toBe(true);
    }
    // Every code line survives, in order.
    const lines = parts.flatMap((part) => part.split('\n')).filter((line) => line.startsWith('print('));
    expect(lines).toEqual(body);
    expect(parts.at(-1)).toContain('Run it with python3.');
  });

  it('keeps an unclosed trailing code block unclosed in its last part only', () => {
    const text = `\`\`\`\n${Array.from({ length: 100 }, (_unused, index) => `row ${index} ${'x'.repeat(20)}`).join('\n')}`;
    const parts = splitMessage(text, { limit: 600, numbered: false });
    for (const part of parts.slice(0, -1)) expect(fencesBalanced(part)).toBe(true);
    expect(parts.at(-1)?.trimEnd().endsWith('```')).toBe(false);
  });

  it('cuts a single huge line at spaces, or anywhere when it has none', () => {
    const spaced = splitMessage(paragraph(1000), { limit: 500 });
    for (const part of spaced) expect(part.length).toBeLessThanOrEqual(500);
    const solid = splitMessage('y'.repeat(1300), { limit: 500, numbered: false });
    expect(solid.join('')).toBe('y'.repeat(1300));
    for (const part of solid) expect(part.length).toBeLessThanOrEqual(500);
  });

  it('does not split an emoji between parts', () => {
    const text = '😀'.repeat(400);
    const parts = splitMessage(text, { limit: 101, numbered: false });
    for (const part of parts) expect(part).toMatch(/^(😀)+$/u);
    expect(parts.join('')).toBe(text);
  });

  it('refuses a limit too small to hold anything useful', () => {
    expect(() => splitMessage('x'.repeat(100), { limit: 10 })).toThrow(RangeError);
  });
});
