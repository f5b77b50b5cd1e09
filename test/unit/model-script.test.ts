// The helpers that script the fake model server by role (test/support/model-script.ts).
import { describe, expect, it } from 'vitest';
import { roleOf, shape } from '../support/model-script.js';

describe('shape', () => {
  it('describes messages compactly', () => {
    expect(shape([{ role: 'user', content: 'Ada wrote:\n> hi' }, { role: 'user', content: '<memory-checkpoint n="1"/>' }])).toEqual(['user:hi', 'marker']);
    expect(shape([{ role: 'assistant', content: null, tool_calls: [{ id: 'a' }, { id: 'b' }] }, { role: 'tool', tool_call_id: 'a', content: 'x' }])).toEqual(['assistant→[a,b]', 'tool(a)']);
  });
});

describe('roleOf', () => {
  it('finds a fork by its role-change instruction, also after it went on with tool results', () => {
    const decider = { role: 'user', content: '<role-change role="decider">…' };
    expect(roleOf({ messages: [{ role: 'user', content: 'hi' }] } as never)).toBe('worker');
    expect(roleOf({ messages: [decider] } as never)).toBe('decider');
    expect(roleOf({ messages: [decider, { role: 'assistant', content: null }, { role: 'tool', content: 'x' }] } as never)).toBe('decider');
  });
});
