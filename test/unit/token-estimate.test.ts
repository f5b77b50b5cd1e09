// R2's token estimate on text that is not English: a CJK character costs a real tokenizer about
// 1–1.5 tokens, so it is counted as at least one (not 3 UTF-8 bytes / 4), and the caps a tool
// result is cut to weigh it the same way, so CJK results stay within their share of the window.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { estimateTokens, textTokens } from '../../src/core/loop/context-window.js';
import { capHeadTail, resultLimitChars } from '../../src/core/output-cap.js';
import { ToolExecutor } from '../../src/core/loop/tool-executor.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { toolContext } from '../support/tool-context.js';

const cjk = (characters: number) => '漢字かな交じり文の報告書'.repeat(Math.ceil(characters / 12)).slice(0, characters);
/** A lone surrogate: half of a character cut in two. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('the token estimate (R2)', () => {
  it('counts a CJK character as at least one token, and ASCII at 4 characters a token as before', () => {
    expect(textTokens(cjk(10_000))).toBeGreaterThanOrEqual(10_000);
    expect(estimateTokens([{ role: 'tool', content: cjk(10_000) }])).toBeGreaterThanOrEqual(10_000);
    const english = 'the quarterly figures hold steady '.repeat(300);
    expect(textTokens(english)).toBe(Math.ceil(english.length / 4));
    expect(estimateTokens([{ role: 'user', content: english }])).toBe(Math.ceil(JSON.stringify([{ role: 'user', content: english }]).length / 4));
  });

  it('counts mixed text per character: ASCII at a quarter, every other character whole', () => {
    expect(textTokens('abcd漢字')).toBe(3);
    expect(textTokens('éèàü')).toBe(4);
  });
});

describe('caps on CJK text', () => {
  const cjkTool = defineTool({ name: 'read_cjk', description: 'Reads a Japanese report.', input: z.object({}), execute: async () => cjk(200_000) }) as AnyTool;
  const executor = new ToolExecutor([cjkTool]);
  const call = { id: 'c1', type: 'function' as const, function: { name: 'read_cjk', arguments: '{}' } };

  it('cuts a CJK tool result to its share of the window in tokens, not in characters', async () => {
    const outcome = await executor.execute(call, toolContext({ contextWindow: 10_000 }));
    // The window's cap is 6,000 characters, about 1,500 tokens; the note adds a line.
    expect(estimateTokens([{ role: 'tool', tool_call_id: 'c1', content: outcome.content }])).toBeLessThanOrEqual(resultLimitChars(10_000) / 4 + 60);
    expect(outcome.content.startsWith('漢字かな')).toBe(true);
    expect(outcome.content).toMatch(/characters of tool result omitted \(200000 in total\)/);
  });

  it('keeps a CJK result within its share of a batch (the worker loop gives it in characters)', async () => {
    const shareChars = 3_000;
    const outcome = await executor.execute(call, { ...toolContext({ contextWindow: 200_000 }), resultLimitChars: shareChars });
    expect(estimateTokens([{ role: 'tool', tool_call_id: 'c1', content: outcome.content }])).toBeLessThanOrEqual(shareChars / 4 + 60);
  });

  it('never cuts a character in two, and keeps ASCII output as it cut it before', () => {
    const emoji = '🙂'.repeat(5_000);
    const cut = capHeadTail(emoji, 1_001, 'output');
    expect(loneSurrogate.test(cut)).toBe(false);
    expect(textTokens(cut)).toBeLessThanOrEqual(1_001 / 4 + 40);
    for (let limit = 400; limit < 420; limit += 1) expect(loneSurrogate.test(capHeadTail(`a${emoji}`, limit))).toBe(false);
    expect(capHeadTail('x'.repeat(1_000), 100)).toBe(`${'x'.repeat(50)}\n[… 900 characters of output omitted (1000 in total); showing the first and last 50 …]\n${'x'.repeat(50)}`);
    expect(capHeadTail(cjk(20), 100)).toBe(cjk(20));
  });
});
