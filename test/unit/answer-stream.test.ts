// AnswerStreams (adapters/chat/answer-stream.ts): deltas coalesced into at most one write per
// interval; nothing written for an answer that came quickly; nothing after the call ended.
import { describe, expect, it } from 'vitest';
import { AnswerStreams, closingText, type AnswerStream } from '../../src/adapters/chat/answer-stream.js';
import type { AgentEvent } from '../../src/core/events.js';
import type { SessionRecord } from '../../src/core/store.js';

const session: SessionRecord = {
  id: 's1', platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: '1.0', memorySpaceId: 'm1', title: 't',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function recorder(intervalMs: number, maxChars = 1_000) {
  const writes: Array<{ text: string; first: boolean; at: number }> = [];
  const streams = new AnswerStreams({
    maxChars, intervalMs,
    schedule: (_sessionId, write) => void write(),
    write: async (stream: AnswerStream, first) => void writes.push({ text: stream.text, first, at: Date.now() }),
  });
  let text = '';
  const delta = (piece: string, seq = 5) => {
    text = seq === 5 ? text + piece : piece;
    streams.delta({ type: 'text-delta', session, segmentId: 'g1', seq, delta: piece, text } satisfies Extract<AgentEvent, { type: 'text-delta' }>);
  };
  return { streams, writes, delta };
}

describe('AnswerStreams', () => {
  it('writes at most once per interval, the first only after text kept coming for one', async () => {
    const { streams, writes, delta } = recorder(60);
    const began = Date.now();
    for (let index = 0; index < 60; index += 1) {
      delta(`w${index} `);
      await sleep(5);
    }
    const ended = streams.end('s1');
    expect(writes.length).toBeGreaterThanOrEqual(2);
    expect(writes.length).toBeLessThanOrEqual(Math.ceil((Date.now() - began) / 60));
    expect(writes[0]?.first).toBe(true);
    expect(writes.slice(1).every((write) => !write.first)).toBe(true);
    expect(writes[0]!.at - began).toBeGreaterThanOrEqual(55);
    for (let index = 1; index < writes.length; index += 1) expect(writes[index]!.at - writes[index - 1]!.at).toBeGreaterThanOrEqual(55);
    expect(ended).toMatchObject({ started: true, seq: 5 });
    // The delta just before the end scheduled a write: the end cancels it.
    const count = writes.length;
    await sleep(150);
    expect(writes.length).toBe(count);
  });

  it('writes nothing for an answer that ended before the first interval', async () => {
    const { streams, writes, delta } = recorder(60);
    delta('Short answer.');
    expect(streams.end('s1')).toBeNull();
    await sleep(120);
    expect(writes).toEqual([]);
  });

  it('shows at most maxChars, and stops writing once that much is shown', async () => {
    const { streams, writes, delta } = recorder(20, 10);
    delta('0123456789abcdef');
    await sleep(60);
    delta('ghij');
    await sleep(60);
    streams.end('s1');
    expect(writes.map((write) => write.text)).toEqual(['0123456789']);
  });

  it('ends a stream with what the model said before its tool calls, or a note', () => {
    const stream: AnswerStream = { session, segmentId: 'g1', seq: 5, text: 'Let me look', started: true };
    const call = { id: 'c', type: 'function' as const, function: { name: 'x', arguments: '{}' } };
    expect(closingText(stream, { type: 'assistant-message', session, segmentId: 'g1', seq: 5, message: { role: 'assistant', content: 'Let me look at the logs.', tool_calls: [call] } }, 100)).toBe('Let me look at the logs.');
    expect(closingText(stream, { type: 'run-end', session, reason: 'stopped', stoppedBy: 'Ada' }, 100)).toBe('Let me look\n\n_(stopped by Ada)_');
    expect(closingText(stream, { type: 'run-end', session, reason: 'error' }, 100)).toBe('Let me look\n\n_(interrupted)_');
  });
});
