// The conversion of our context to an Anthropic prompt, and where its cache breakpoints go.
import { describe, expect, it } from 'vitest';
import { toAnthropicPrompt } from '../../src/adapters/model/anthropic-messages.js';
import type { ChatMessage, ToolDefinition } from '../../src/core/messages.js';

const tools: ToolDefinition[] = [{ type: 'function', function: { name: 'echo', description: 'Echoes.', parameters: { type: 'object', properties: { text: { type: 'string' } } } } }];

const init: ChatMessage[] = [
  { role: 'system', content: 'You are Hippo.' },
  { role: 'user', content: '<memory-documents>MAIN.md</memory-documents>' },
];

function call(id: string, text = 'x'): ChatMessage {
  return { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'echo', arguments: JSON.stringify({ text }) } }] };
}

function result(id: string, text = 'echo: x'): ChatMessage {
  return { role: 'tool', tool_call_id: id, content: text };
}

/** Every block of the prompt as `role:type`, with `*` where a cache breakpoint is. */
function marks(messages: ChatMessage[], options: { markLast?: boolean } = {}): string[] {
  const prompt = toAnthropicPrompt(messages, tools, options);
  const out = (prompt.system ?? []).map((block) => `system:text${block.cache_control ? '*' : ''}`);
  for (const message of prompt.messages) {
    for (const block of message.content as Array<{ type: string; cache_control?: unknown }>) out.push(`${message.role}:${block.type}${block.cache_control ? '*' : ''}`);
  }
  return out;
}

describe('toAnthropicPrompt', () => {
  it('moves leading system messages to `system` and tools to input_schema', () => {
    const prompt = toAnthropicPrompt([...init, { role: 'user', content: 'hi' }], tools);
    expect(prompt.system).toEqual([{ type: 'text', text: 'You are Hippo.', cache_control: { type: 'ephemeral' } }]);
    expect(prompt.tools).toEqual([{ name: 'echo', description: 'Echoes.', input_schema: tools[0]!.function.parameters }]);
    expect(prompt.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: '<memory-documents>MAIN.md</memory-documents>', cache_control: { type: 'ephemeral' } }] });
  });

  it('sends tool calls as tool_use and consecutive tool results in one user message', () => {
    const prompt = toAnthropicPrompt([...init, { role: 'user', content: 'go' }, { role: 'assistant', content: 'Two at once.', tool_calls: [...call('c1').tool_calls!, ...call('c2', 'y').tool_calls!] }, result('c1'), result('c2', 'echo: y')], tools);
    expect(prompt.messages.slice(2)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'Two at once.' }, { type: 'tool_use', id: 'c1', name: 'echo', input: { text: 'x' } }, { type: 'tool_use', id: 'c2', name: 'echo', input: { text: 'y' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'echo: x' }, { type: 'tool_result', tool_use_id: 'c2', content: 'echo: y', cache_control: { type: 'ephemeral' } }] },
    ]);
  });

  it('marks the system prompt, where the previous call ended and the last non-user message; a fork also its last message', () => {
    const context = [...init, { role: 'user', content: 'go' } as ChatMessage, call('c1'), result('c1'), call('c2'), result('c2'), { role: 'user', content: '<memory-checkpoint n="1"/>' } as ChatMessage];
    expect(marks(context)).toEqual([
      'system:text*', 'user:text', 'user:text', 'assistant:tool_use', 'user:tool_result*', 'assistant:tool_use', 'user:tool_result*', 'user:text',
    ]);
    // A summarizer's instruction is marked too, for its next step: 4 marks, the API's limit.
    expect(marks([...context, { role: 'user', content: '<role-change role="summarizer">' }], { markLast: true })).toEqual([
      'system:text*', 'user:text', 'user:text', 'assistant:tool_use', 'user:tool_result*', 'assistant:tool_use', 'user:tool_result*', 'user:text', 'user:text*',
    ]);
    // A decider's is not: it answers in one call, so the worker's marks are all it sends.
    expect(marks([...context, { role: 'user', content: '<role-change role="decider">' }])).toEqual([
      'system:text*', 'user:text', 'user:text', 'assistant:tool_use', 'user:tool_result*', 'assistant:tool_use', 'user:tool_result*', 'user:text', 'user:text',
    ]);
  });

  it('marks the memory documents until the first answer', () => {
    expect(marks([...init, { role: 'user', content: 'hello' }])).toEqual(['system:text*', 'user:text*', 'user:text']);
    expect(marks([...init, { role: 'user', content: 'hello' }, { role: 'user', content: 'anyone?' }], { markLast: true })).toEqual(['system:text*', 'user:text*', 'user:text', 'user:text*']);
  });

  it('marks the answer when the context ends with one (a fork at an answer without tool calls)', () => {
    const context: ChatMessage[] = [...init, { role: 'user', content: 'hello' }, { role: 'assistant', content: 'Hi!' }, { role: 'user', content: '<role-change role="summarizer">' }];
    expect(marks(context, { markLast: true })).toEqual(['system:text*', 'user:text', 'user:text*', 'assistant:text*', 'user:text*']);
  });

  it('keeps every earlier block and mark when a user message is appended (R1 at the wire)', () => {
    const contexts: ChatMessage[][] = [
      [...init, { role: 'user', content: 'go' }],
      [...init, { role: 'user', content: 'go' }, call('c1'), result('c1')],
      [...init, { role: 'user', content: 'go' }, call('c1'), result('c1'), { role: 'user', content: [{ type: 'text', text: 'images' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
      [...init, { role: 'user', content: 'go' }, call('c1'), result('c1'), { role: 'user', content: 'marker' }, { role: 'user', content: 'steer' }],
      [...init, { role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }, call('c1'), result('c1'), call('c2'), result('c2'), { role: 'assistant', content: 'done' }],
    ];
    for (const context of contexts) {
      const worker = toAnthropicPrompt(context, tools);
      const summarizer = toAnthropicPrompt([...context, { role: 'user', content: '<role-change role="summarizer">' }], tools, { markLast: true });
      const decider = toAnthropicPrompt([...context, { role: 'user', content: '<role-change role="decider">' }], tools);
      for (const fork of [summarizer, decider]) {
        expect(JSON.stringify({ ...fork, messages: fork.messages.slice(0, -1) })).toBe(JSON.stringify(worker));
        const count = JSON.stringify(fork).split('"cache_control"').length - 1;
        expect(count).toBeLessThanOrEqual(4);
      }
      expect(summarizer.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: '<role-change role="summarizer">', cache_control: { type: 'ephemeral' } }] });
      expect(decider.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: '<role-change role="decider">' }] });
    }
  });

  it('sends images as base64 image blocks (a data URL) or URL images', () => {
    const prompt = toAnthropicPrompt([...init, { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } }, { type: 'image_url', image_url: { url: 'https://example.org/a.png' } }] }], tools);
    expect(prompt.messages[1]?.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
      { type: 'image', source: { type: 'url', url: 'https://example.org/a.png' } },
    ]);
  });

  it('leaves out empty answers and empty results, maps foreign ids and keeps arguments that are not a JSON object', () => {
    const prompt = toAnthropicPrompt([
      ...init,
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '  ' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'functions.echo:0', type: 'function', function: { name: 'echo', arguments: '{"text": "cut' } }] },
      { role: 'tool', tool_call_id: 'functions.echo:0', content: '' },
    ], tools);
    expect(prompt.messages.slice(1).map((message) => message.role)).toEqual(['user', 'user', 'assistant', 'user']);
    expect(prompt.messages[3]?.content).toEqual([{ type: 'tool_use', id: 'functions_echo_0', name: 'echo', input: { invalid_json: '{"text": "cut' } }]);
    expect(prompt.messages[4]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'functions_echo_0', cache_control: { type: 'ephemeral' } }]);
  });
});
