import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DeadlineReached } from '../../src/core/errors.js';
import { resultLimitChars } from '../../src/core/output-cap.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { ToolExecutor } from '../../src/core/loop/tool-executor.js';
import { toolContext } from '../support/tool-context.js';

/** A tool that returns (or throws) `size` characters, as a misbehaving tool or MCP server might. */
function floodTool(name: string, size: number, fails: boolean): AnyTool {
  return defineTool({
    name,
    description: 'returns a huge text',
    input: z.object({}),
    execute: async () => {
      const text = `start-${'x'.repeat(size)}-end`;
      if (fails) throw new Error(text);
      return text;
    },
  }) as AnyTool;
}

const call = (name: string, args = '{}') => ({ id: 'c1', type: 'function' as const, function: { name, arguments: args } });

describe('ToolExecutor', () => {
  const executor = new ToolExecutor([floodTool('flood', 5_000_000, false), floodTool('flood_error', 5_000_000, true)]);

  it('caps any tool result to the budget of the context window, keeping head and tail', async () => {
    const outcome = await executor.execute(call('flood'), toolContext({ contextWindow: 10_000 }));
    expect(outcome.ok).toBe(true);
    // 10% of 10,000 tokens at 4 characters a token, plus 2,000 for a header; the note adds a line.
    expect(resultLimitChars(10_000)).toBe(6_000);
    expect(outcome.content.length).toBeLessThan(6_200);
    expect(outcome.content.startsWith('start-xxx')).toBe(true);
    expect(outcome.content.endsWith('xxx-end')).toBe(true);
    expect(outcome.content).toMatch(/characters of tool result omitted \(5000010 in total\)/);
  });

  it('stops a tool that runs past its time with a deadline as the abort reason, and answers that it timed out', async () => {
    let reason: unknown;
    const slow = defineTool({
      name: 'slow',
      description: 'waits for its signal',
      input: z.object({}),
      timeoutMs: 50,
      execute: (_input, context) => new Promise<string>((_resolve, reject) => {
        context.signal.addEventListener('abort', () => {
          reason = context.signal.reason;
          reject(new Error('aborted'));
        }, { once: true });
      }),
    }) as AnyTool;
    const outcome = await new ToolExecutor([slow]).execute(call('slow'), toolContext());
    expect(outcome).toEqual({ ok: false, content: 'Error: slow timed out after 50 ms and was stopped' });
    expect(reason).toBeInstanceOf(DeadlineReached);
    expect((reason as DeadlineReached).message).toBe('timed out after 50 ms');
  });

  it('caps tool errors to a few thousand characters', async () => {
    const outcome = await executor.execute(call('flood_error'), toolContext());
    expect(outcome.ok).toBe(false);
    expect(outcome.content.length).toBeLessThan(4_200);
    expect(outcome.content).toMatch(/^Error: start-x+\n\[… \d+ characters of error message omitted/);
  });

  it('caps the error about an unknown tool whose name is huge', async () => {
    const outcome = await executor.execute(call('n'.repeat(1_000_000)), toolContext());
    expect(outcome.ok).toBe(false);
    expect(outcome.content.length).toBeLessThan(4_200);
  });

  it('leaves results within the budget untouched', async () => {
    const small = new ToolExecutor([floodTool('small', 100, false)]);
    expect((await small.execute(call('small'), toolContext())).content).toBe(`start-${'x'.repeat(100)}-end`);
  });
});
