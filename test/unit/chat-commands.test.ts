import { describe, expect, it } from 'vitest';
import { helpText, mentionCommand, parseCommand } from '../../src/adapters/chat/commands.js';

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

describe('mentionCommand', () => {
  it('takes one command word, or remember/forget/pin with their text kept as written', () => {
    expect(mentionCommand('memory')).toEqual({ verb: 'memory', rest: '' });
    expect(mentionCommand('Remember: the deploy window\nis Tuesday')).toEqual({ verb: 'remember', rest: 'the deploy window\nis Tuesday' });
    expect(mentionCommand('pin budget is 10k')).toEqual({ verb: 'pin', rest: 'budget is 10k' });
    expect(mentionCommand('forget')).toEqual({ verb: 'forget', rest: '' });
    expect(mentionCommand('status of the build')).toBeNull();
    expect(mentionCommand('please remember this')).toBeNull();
    expect(mentionCommand('Reset!')).toEqual({ verb: 'reset', rest: '' });
    expect(mentionCommand('reset the database please')).toBeNull();
    expect(mentionCommand('')).toBeNull();
  });

  it('takes memory search with its words and memory export; bare "search …" stays a request', () => {
    expect(mentionCommand('memory search Deploy Fenster')).toEqual({ verb: 'search', rest: 'Deploy Fenster' });
    expect(mentionCommand('Memory export')).toEqual({ verb: 'export', rest: '' });
    expect(parseCommand('/hippo memory search')).toEqual({ verb: 'search', rest: '' });
    expect(mentionCommand('memory of the meeting')).toBeNull();
    expect(mentionCommand('search the web for the Node 24 release notes')).toBeNull();
    expect(mentionCommand('export the report as PDF')).toBeNull();
    expect(parseCommand('search memory')).toEqual({ unknown: 'search' });
  });

  it('takes budget with its amount', () => {
    expect(mentionCommand('budget 5')).toEqual({ verb: 'budget', rest: '5' });
    expect(mentionCommand('budget')).toEqual({ verb: 'budget', rest: '' });
  });
});

describe('helpText', () => {
  it('lists every verb with the platform prefix and names the unknown word', () => {
    const text = helpText('/hippo', 'frobnicate');
    expect(text).toContain('"frobnicate"');
    for (const verb of ['pause', 'resume', 'stop', 'reset', 'status', 'memory', 'memory search', 'memory export', 'revert', 'remember', 'forget', 'pin', 'budget', 'help']) expect(text).toContain(`/hippo ${verb}`);
  });
});
