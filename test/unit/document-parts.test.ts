import { describe, expect, it } from 'vitest';
import { decodeJoins, documentParts, encodeJoins, findPart, joinPieces, partPieces, replacePart } from '../../src/core/document-parts.js';

const limits = { inputChars: 100, inputs: 3 };
const section = (name: string, lines: number) => `## ${name}\n${Array.from({ length: lines }, (_unused, line) => `- ${name} ${line} ${'x'.repeat(20)}`).join('\n')}`;

describe('documentParts', () => {
  it('keeps a document that fits one form whole', () => {
    expect(documentParts('# Memory\n- a\n', limits)).toEqual([expect.objectContaining({ index: 0, title: 'the whole document', text: '# Memory\n- a\n' })]);
  });

  it('cuts a long document by heading, chunks a section too long for one form, and loses no character', () => {
    const content = `intro line\n${section('Alpha', 3)}\n${section('Beta', 30)}\n\`\`\`\n## not a heading (code)\n\`\`\`\n${section('Alpha', 2)}\n`;
    const parts = documentParts(content, limits);
    expect(parts.map((part) => part.title)).toEqual([
      '(top of the document)', 'Alpha', ...Array.from({ length: parts.length - 3 }, (_unused, index) => `Beta (part ${index + 1} of ${parts.length - 3})`), 'Alpha',
    ]);
    expect(parts.at(-1)?.key).toEqual({ heading: '## Alpha', occurrence: 1, chunk: 0 });
    expect(parts.map((part) => part.text).join('\n')).toBe(content);
    for (const part of parts) {
      const { pieces } = partPieces(part.text, limits.inputChars);
      expect(pieces.length).toBeLessThanOrEqual(limits.inputs);
      for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(limits.inputChars);
    }
  });

  it('finds the same part in a newer version, or nothing when it is gone', () => {
    const content = `${section('Alpha', 3)}\n${section('Beta', 3)}\n${section('Gamma', 3)}`;
    const beta = documentParts(content, limits).find((part) => part.title === 'Beta')!;
    const newer = `${section('Alpha', 4)}\n${section('Beta', 2)}\n${section('Gamma', 3)}`;
    expect(findPart(newer, beta.key, limits)?.text).toBe(section('Beta', 2));
    expect(findPart(section('Alpha', 30), beta.key, limits)).toBeNull();
  });
});

describe('pieces', () => {
  it('cuts at line ends, inside a line only when a line is longer than an input, and joins back exactly', () => {
    const text = `short\n${'y'.repeat(250)}\nlast`;
    const { pieces, joins } = partPieces(text, 100);
    expect(pieces.every((piece) => piece.length <= 100)).toBe(true);
    expect(joins).toContain('');
    expect(joinPieces(pieces, decodeJoins(encodeJoins(joins)))).toBe(text);
  });

  it('replaces a part and keeps the line breaks a form dropped', () => {
    const content = `${section('Alpha', 8)}\n${section('Beta', 3)}\n`;
    const beta = documentParts(content, limits).find((part) => part.title === 'Beta')!;
    expect(replacePart(content, beta, '## Beta\n- changed')).toBe(`${section('Alpha', 8)}\n## Beta\n- changed\n`);
  });
});
