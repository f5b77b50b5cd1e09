// The fake Messages API's prompt cache and request checks: the instrument the Anthropic tests
// measure cache marks with, so it must cache only what the real API caches.
import { describe, expect, it } from 'vitest';
import { chatView, FakePromptCache, invalidRequest, type AnthropicRequestBody, type WireBlock } from '../fakes/fake-anthropic-prompt.js';

const mark = { type: 'ephemeral' };

function text(value: string, marked = false): WireBlock {
  return { type: 'text', text: value, ...(marked ? { cache_control: mark } : {}) };
}

function body(messages: Array<{ role: string; content: WireBlock[] }>, options: { system?: boolean } = {}): AnthropicRequestBody {
  return { model: 'claude-fake', max_tokens: 100, ...(options.system === false ? {} : { system: [text('rules '.repeat(50), true)] }), messages };
}

const call: WireBlock = { type: 'tool_use', id: 'toolu_1', name: 'echo', input: {} };
const result: WireBlock = { type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' };

describe('FakePromptCache', () => {
  it('writes only at marks, once committed, and reads the longest entry ending at a mark', () => {
    const cache = new FakePromptCache(0);
    const first = body([{ role: 'user', content: [text('a'.repeat(400), true), text('b'.repeat(400))] }]);
    const lookup = cache.lookup('key', first);
    expect(lookup.outcome.read).toBe(0);
    // Written up to the last mark; the unmarked block after it is plain input.
    expect(lookup.outcome.written).toBe(lookup.outcome.breakpoints.at(-1));
    expect(lookup.outcome.promptTokens).toBeGreaterThan(lookup.outcome.written);
    // Not readable before the answer started.
    expect(cache.lookup('key', first).outcome.read).toBe(0);
    lookup.commit();
    const again = cache.lookup('key', body([{ role: 'user', content: [text('a'.repeat(400)), text('b'.repeat(400), true)] }]));
    // Its mark is on the second block, 1 block after the entry: found by looking back.
    expect(again.outcome.read).toBe(lookup.outcome.breakpoints.at(-1));
  });

  it('finds nothing more than 20 blocks before a mark, in another key, or under the minimum size', () => {
    const cache = new FakePromptCache(0);
    const head = text('x'.repeat(400), true);
    cache.lookup('key', body([{ role: 'user', content: [head] }], { system: false })).commit();
    const tail = Array.from({ length: 25 }, (_, index) => text(`block ${index}`));
    const far = body([{ role: 'user', content: [text('x'.repeat(400)), ...tail.slice(0, -1), { ...tail.at(-1)!, cache_control: mark }] }], { system: false });
    expect(cache.lookup('key', far).outcome.read).toBe(0);
    const near = body([{ role: 'user', content: [text('x'.repeat(400)), ...tail.slice(0, 5), { ...tail[5]!, cache_control: mark }] }], { system: false });
    expect(cache.lookup('key', near).outcome.read).toBeGreaterThan(0);
    expect(cache.lookup('other key', near).outcome.read).toBe(0);
    const small = new FakePromptCache(1_000_000);
    const lookup = small.lookup('key', body([{ role: 'user', content: [head] }]));
    lookup.commit();
    expect(lookup.outcome.written).toBe(0);
    expect(small.lookup('key', body([{ role: 'user', content: [head] }])).outcome.read).toBe(0);
  });
});

describe('FakePromptCache lifetime', () => {
  it('forgets an entry 5 minutes after it was last written or read', () => {
    let now = 0;
    const cache = new FakePromptCache(0, { now: () => now });
    const request = body([{ role: 'user', content: [text('a'.repeat(400), true)] }]);
    const written = cache.lookup('key', request);
    written.commit();
    now = 4 * 60_000;
    // A longer prompt marked further on reads the entry by looking back, and writes its own.
    const longer = cache.lookup('key', body([{ role: 'user', content: [text('a'.repeat(400)), text('b'.repeat(400), true)] }]));
    expect(longer.outcome.read).toBe(written.outcome.written);
    longer.commit(); // the entry it read is refreshed: 5 more minutes from now
    now = 8 * 60_000;
    expect(cache.lookup('key', request).outcome.read).toBe(written.outcome.written);
    now = 9 * 60_000 + 1;
    expect(cache.lookup('key', request).outcome.read).toBe(0);
  });
});

describe('invalidRequest', () => {
  it('accepts a tool exchange whose results come in consecutive user messages', () => {
    expect(invalidRequest(body([{ role: 'user', content: [text('go')] }, { role: 'assistant', content: [call] }, { role: 'user', content: [result] }, { role: 'user', content: [text('marker')] }]))).toBeNull();
  });

  it('refuses what the API refuses', () => {
    const { max_tokens: _omitted, ...withoutMaxTokens } = body([{ role: 'user', content: [text('go')] }]);
    expect(invalidRequest(withoutMaxTokens)).toMatch(/max_tokens/);
    expect(invalidRequest(body([{ role: 'user', content: [text('  ')] }]))).toMatch(/non-whitespace text/);
    expect(invalidRequest(body([{ role: 'user', content: [] }]))).toMatch(/non-empty content/);
    expect(invalidRequest(body([{ role: 'user', content: [text('go')] }, { role: 'assistant', content: [call] }, { role: 'user', content: [text('no result')] }]))).toMatch(/tool_use` ids were found without `tool_result`/);
    expect(invalidRequest(body([{ role: 'user', content: [result] }]))).toMatch(/unexpected `tool_use_id`/);
    expect(invalidRequest(body([{ role: 'user', content: [text('go')] }, { role: 'assistant', content: [call] }, { role: 'user', content: [text('first'), result] }]))).toMatch(/tool_result blocks must come before/);
    const marks = body([{ role: 'user', content: [text('a', true), text('b', true), text('c', true), text('d', true)] }]);
    expect(invalidRequest(marks)).toBe('A maximum of 4 blocks with cache_control may be provided. Found 5.');
  });
});

describe('chatView', () => {
  it('shows a request as Chat Completions messages for test scripts', () => {
    const view = chatView(body([{ role: 'user', content: [text('go')] }, { role: 'assistant', content: [text('Calling.'), call] }, { role: 'user', content: [result] }, { role: 'user', content: [text('<memory-checkpoint n="1"/>')] }]));
    expect(view.messages.slice(1)).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Calling.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'echo', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'ok' },
      { role: 'user', content: '<memory-checkpoint n="1"/>' },
    ]);
  });
});
