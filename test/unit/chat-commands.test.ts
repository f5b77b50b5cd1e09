import { describe, expect, it } from 'vitest';
import { exactCommand, helpText, parseCommand } from '../../src/adapters/chat/commands.js';

describe('parseCommand', () => {
  it('reads the verb case-insensitively and keeps the rest', () => {
    expect(parseCommand('Status please')).toEqual({ verb: 'status', rest: 'please' });
    expect(parseCommand('  pause ')).toEqual({ verb: 'pause', rest: '' });
    expect(parseCommand('/hippo memory')).toEqual({ verb: 'memory', rest: '' });
  });

  it('treats empty text as help and names an unknown word', () => {
    expect(parseCommand('')).toEqual({ verb: 'help', rest: '' });
    expect(parseCommand('frobnicate the thing')).toEqual({ unknown: 'frobnicate' });
  });
});

describe('exactCommand', () => {
  it('recognises a message that is exactly one command word', () => {
    expect(exactCommand('status')).toBe('status');
    expect(exactCommand('Reset!')).toBe('reset');
    expect(exactCommand('reset the database please')).toBeNull();
    expect(exactCommand('')).toBeNull();
  });
});

describe('helpText', () => {
  it('lists every verb with the platform prefix and names the unknown word', () => {
    const text = helpText('/hippo', 'frobnicate');
    expect(text).toContain('"frobnicate"');
    for (const verb of ['pause', 'resume', 'stop', 'reset', 'status', 'memory', 'revert', 'forget', 'help']) expect(text).toContain(`/hippo ${verb}`);
  });
});
