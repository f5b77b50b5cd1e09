// R17: a summarizer's note is read from its transcript, so the note sent again after a restart (read
// from the stored transcript) says what the first one said, however the run ended.
import { describe, expect, it } from 'vitest';
import { summarizerNote } from '../../src/core/memory/summarizer.js';

const instruction = { role: 'user', content: '<role-change>summarize</role-change>' };
const done = (note: unknown) => [
  instruction,
  { role: 'assistant', content: null, tool_calls: [
    { id: 's1', type: 'function', function: { name: 'memory_append', arguments: '{"path":"MAIN.md","text":"x"}' } },
    { id: 's2', type: 'function', function: { name: 'memory_done', arguments: JSON.stringify(note === undefined ? {} : { note }) } },
  ] },
  { role: 'tool', tool_call_id: 's1', content: 'appended' },
  { role: 'tool', tool_call_id: 's2', content: 'done' },
];

describe('summarizerNote', () => {
  it('is the first line of the final answer', () => {
    expect(summarizerNote([instruction, { role: 'assistant', content: '  updated MAIN.md\nwith details' }])).toBe('updated MAIN.md');
  });

  it('is the note of the memory_done call that ended the run, which leaves no final answer', () => {
    expect(summarizerNote(done('noted the billing move\nmore'))).toBe('noted the billing move');
    expect(summarizerNote(done(undefined))).toBe('no change');
    expect(summarizerNote(done('x'.repeat(500)))).toHaveLength(300);
  });

  it('is empty for a transcript of another shape (stored JSON is not trusted)', () => {
    expect(summarizerNote([])).toBe('');
    expect(summarizerNote([instruction, { role: 'assistant', tool_calls: { not: 'a list' } }, { role: 'tool', content: 'x' }])).toBe('');
    expect(summarizerNote([null, 3, 'text'])).toBe('');
  });
});
