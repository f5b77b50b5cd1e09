// R20's carry-over: it fits the budget, keeps the newest messages in order, says how many stayed in
// the archive, stays linear in the message count, counts images, and never separates a tool call
// from its results (R6), however the carry-over is shaped.
import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../src/core/loop/context-window.js';
import { carryOver, fitCarryOver, trimCarryOver } from '../../src/core/memory/carry-over.js';
import type { ChatMessage } from '../../src/core/messages.js';
import type { StoredMessage } from '../../src/core/store.js';

const entry = (seq: number, message: ChatMessage, flags: Partial<StoredMessage> = {}): StoredMessage => ({
  seq, message, isInit: false, isMarker: false, memoryRunId: null, ...flags,
});
const user = (text: string): ChatMessage => ({ role: 'user', content: text });
const calls = (ids: string[], text: string | null = null, argumentsText = '{}'): ChatMessage => ({
  role: 'assistant', content: text, tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: `tool_${id}`, arguments: argumentsText } })),
});
const result = (id: string, text: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: text });
const list = (...messages: ChatMessage[]): StoredMessage[] => messages.map((message, seq) => entry(seq, message));
const tokensOf = (entries: readonly StoredMessage[]) => estimateTokens(entries.map((item) => item.message));
/** The carried messages after the note that says how many stayed in the archive, if there is one. */
const afterNote = (entries: readonly StoredMessage[]) => (String(entries[0]?.message.content).includes('were not carried over') ? entries.slice(1) : entries);

function conversation(count: number): StoredMessage[] {
  return list(...Array.from({ length: count }, (_, seq) => user(`message ${seq}`)));
}

/**
 * R6, R20: no result without its call right before it, no call of an earlier message without its
 * results, and the carry-over never starts with a result.
 */
function expectPaired(entries: readonly StoredMessage[]): void {
  expect(entries[0]?.message.role).not.toBe('tool');
  let asked = new Set<string>();
  let answered = new Set<string>();
  for (const [index, { message }] of entries.entries()) {
    if (message.role === 'tool') {
      expect(asked.has(message.tool_call_id ?? ''), `result ${message.tool_call_id} at ${index} follows its call`).toBe(true);
      answered.add(message.tool_call_id ?? '');
      continue;
    }
    expect([...asked].filter((id) => !answered.has(id)), `calls answered before message ${index}`).toEqual([]);
    asked = new Set((message.tool_calls ?? []).map((call) => call.id));
    answered = new Set();
  }
}

describe('trimCarryOver', () => {
  it('drops the oldest of 40,000 small messages until the rest fits, and says how many', () => {
    const carried = conversation(40_000);
    const budget = 2_000;
    const trimmed = trimCarryOver(carried, budget);
    expect(tokensOf(trimmed)).toBeLessThanOrEqual(budget);
    const note = trimmed[0]?.message.content as string;
    const dropped = Number(/^\[(\d+) earlier messages/.exec(note)?.[1]);
    expect(trimmed.at(-1)?.message.content).toBe('message 39999');
    expect(dropped + trimmed.length - 1).toBe(40_000);
    // The newest messages are kept, in order, right after the note.
    expect(trimmed[1]?.message.content).toBe(`message ${dropped}`);
  });

  it('keeps everything when it already fits', () => {
    const carried = conversation(10);
    expect(trimCarryOver(carried, 10_000)).toEqual(carried);
  });

  it('never leaves a tool result without its call when the budget leaves room for little (the 40k-window defect)', () => {
    // A person's long message, then one call whose result is large: the old trim kept [note, result].
    const carried = list(user(`Ada wrote:\n> ${'please save this '.repeat(400)}`), calls(['save1']), result('save1', 'saved '.repeat(2_000)));
    for (const budget of [0, 60, 90, 120, 200, 400, 2_000]) {
      const trimmed = trimCarryOver(carried, budget);
      expectPaired(afterNote(trimmed));
      expect(trimmed.map((item) => item.message.role)).not.toEqual(['user', 'tool']);
      if (budget >= 200) expect(tokensOf(trimmed)).toBeLessThanOrEqual(budget);
    }
    // With room for the call and its stub, both are carried (the person's message stays in the archive).
    const trimmed = trimCarryOver(carried, 200);
    expect(trimmed.map((item) => item.message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(trimmed[2]?.message.content).toMatch(/^\[tool_save1 result/);
  });

  it('carries a batch of several calls whole or not at all', () => {
    const batch = ['a', 'b', 'c', 'd'];
    const carried = list(user('go'), calls(batch, 'reading four files'), ...batch.map((id) => result(id, `${id} `.repeat(3_000))));
    for (let budget = 0; budget <= 1_200; budget += 25) {
      const trimmed = trimCarryOver(carried, budget);
      expectPaired(trimmed);
      const results = trimmed.filter((item) => item.message.role === 'tool').length;
      expect([0, batch.length]).toContain(results);
    }
  });

  it('keeps a carry-over of nothing but calls and results in whole groups, the newest last', () => {
    const carried = list(...Array.from({ length: 30 }, (_, index) => [calls([`c${index}`]), result(`c${index}`, `result ${index} `.repeat(200))]).flat());
    for (const budget of [150, 500, 1_000, 3_000]) {
      const trimmed = trimCarryOver(carried, budget);
      expectPaired(afterNote(trimmed));
      expect(tokensOf(trimmed)).toBeLessThanOrEqual(budget);
      expect(trimmed.at(-1)?.message.tool_call_id).toBe('c29');
    }
  });

  it('cuts the text of an assistant message with calls, or drops it with its results, never one without the other', () => {
    // Huge text and huge arguments (a file the model saves): neither a stub nor a cut shortens the arguments.
    const big = calls(['w1'], 'thinking aloud '.repeat(5_000), JSON.stringify({ path: 'a.txt', content: 'x'.repeat(40_000) }));
    const carried = list(user('write the file'), big, result('w1', 'written'));
    const small = trimCarryOver(carried, 2_000);
    expectPaired(small);
    expect(tokensOf(small)).toBeLessThanOrEqual(2_000);
    expect(small.map((item) => item.message.role)).toEqual(['user']);
    // Room for the arguments: the group is kept with its text cut.
    const roomy = trimCarryOver(carried, 13_000);
    expectPaired(afterNote(roomy));
    expect(tokensOf(roomy)).toBeLessThanOrEqual(13_000);
    expect(roomy.map((item) => item.message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(String(roomy[1]?.message.content)).toContain('characters of message omitted');
  });

  it('cuts a single message too large for the budget, with no note when nothing stayed in the archive', () => {
    const trimmed = trimCarryOver(list(user(`Ada wrote:\n> ${'a long paste '.repeat(4_000)}`)), 1_000);
    expect(trimmed).toHaveLength(1);
    expect(String(trimmed[0]?.message.content)).toMatch(/^Ada wrote:[\s\S]*characters of message omitted/);
    expect(tokensOf(trimmed)).toBeLessThanOrEqual(1_000);
  });

  it('holds its rules on many random shapes and budgets', () => {
    const random = seeded(39);
    for (let round = 0; round < 300; round += 1) {
      const messages: ChatMessage[] = [];
      const groups = 1 + Math.floor(random() * 8);
      for (let group = 0; group < groups; group += 1) {
        const size = Math.floor(random() * 4_000);
        if (random() < 0.4) messages.push(user(`u${group} `.repeat(size / 4)));
        else {
          const ids = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, index) => `g${group}_${index}`);
          messages.push(calls(ids, random() < 0.5 ? `t${group} `.repeat(size / 4) : null));
          messages.push(...ids.map((id) => result(id, `r `.repeat(Math.floor(random() * 3_000)))));
        }
      }
      const budget = Math.floor(random() * 3_000);
      const trimmed = trimCarryOver(list(...messages), budget);
      expectPaired(afterNote(trimmed));
      if (budget >= 100) expect(tokensOf(trimmed)).toBeLessThanOrEqual(budget);
    }
  });
});

describe('images in the carry-over (R20)', () => {
  // Four 1 MiB screenshots a person shared in one message, each saved in the workspace.
  const image = (index: number) => `data:image/png;base64,${String.fromCharCode(65 + index).repeat(Math.ceil((1024 * 1024 * 4) / 3))}`;
  const screenshots: ChatMessage = {
    role: 'user',
    content: [
      { type: 'text', text: `Ada wrote:\n> what is wrong here?\n${[0, 1, 2, 3].map((index) => `(attached: shot${index}.png, image/png, 1.0 MB, saved as files/shot${index}.png; shown below)`).join('\n')}` },
      ...[0, 1, 2, 3].map((index) => ({ type: 'image_url' as const, image_url: { url: image(index) } })),
    ],
  };

  it('replaces images by a note naming their file, oldest first, until the carry-over fits', () => {
    const carried = list(screenshots, { role: 'assistant', content: 'looking' });
    expect(tokensOf(carried)).toBeGreaterThan(20_000);
    const fitted = fitCarryOver(carried, 6_000);
    expect(fitted.fits).toBe(true);
    expect(tokensOf(fitted.entries)).toBeLessThanOrEqual(6_000);
    const parts = fitted.entries[0]!.message.content as Array<{ type: string; text?: string }>;
    // The newest image stays; the three older ones say where their file is.
    expect(parts.map((part) => part.type)).toEqual(['text', 'text', 'text', 'text', 'image_url']);
    expect(parts.slice(1, 4).map((part) => /saved in the workspace as (\S+)\./.exec(part.text ?? '')?.[1])).toEqual(['files/shot0.png', 'files/shot1.png', 'files/shot2.png']);
  });

  it('drops every image when even one does not fit, before dropping any message', () => {
    const carried = list(screenshots, { role: 'assistant', content: 'looking' });
    const trimmed = trimCarryOver(carried, 1_000);
    expect(tokensOf(trimmed)).toBeLessThanOrEqual(1_000);
    expect(trimmed).toHaveLength(2);
    expect(JSON.stringify(trimmed)).not.toContain('data:image');
    expect(JSON.stringify(trimmed)).toContain('files/shot3.png');
  });
});

describe('carryOver', () => {
  const marker = (seq: number, runId: string) => entry(seq, user('<memory-checkpoint/>'), { isMarker: true, memoryRunId: runId });

  it('never starts inside a batch: a boundary between a call and its results moves back to the call', () => {
    const entries = [entry(0, user('go')), entry(1, calls(['a', 'b'])), entry(2, result('a', 'x')), marker(3, 'r1'), entry(4, result('b', 'y'))];
    expect(carryOver(entries, new Set(['r1'])).map((item) => item.seq)).toEqual([1, 2, 4]);
  });

  it('drops a result whose call is gone, and an earlier call whose results are gone', () => {
    // A segment an older trim left as [note, result]: the next reset does not carry the orphan again.
    const entries = [entry(0, user('[3 earlier messages were not carried over]')), entry(1, result('save1', 'saved')), entry(2, calls(['x'])), entry(3, user('Ada wrote:\n> and now?'))];
    const carried = carryOver(entries, new Set());
    expect(carried.map((item) => item.seq)).toEqual([0, 3]);
  });

  it('drops a result at the very start whose call is nowhere, and trimCarryOver does the same', () => {
    const entries = [entry(0, result('lost', 'x')), entry(1, user('Ada wrote:\n> hi')), entry(2, calls(['a'])), entry(3, result('a', 'y'))];
    expect(carryOver(entries, new Set()).map((item) => item.seq)).toEqual([1, 2, 3]);
    expect(trimCarryOver(entries, 10_000).map((item) => item.seq)).toEqual([1, 2, 3]);
  });

  it('keeps the calls of a crashed turn that have no result yet, when they come last (the worker runs them)', () => {
    const entries = [entry(0, user('go')), entry(1, calls(['a', 'b'])), entry(2, result('a', 'x'))];
    expect(carryOver(entries, new Set()).map((item) => item.seq)).toEqual([0, 1, 2]);
  });
});

/** A small seeded generator (mulberry32): the random shapes are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}
