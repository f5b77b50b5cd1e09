// Which workspace files an answer sends: the successful attach_file calls since the previous answer.
import { describe, expect, it } from 'vitest';
import { answerFiles } from '../../src/core/loop/answer-files.js';
import type { ChatMessage } from '../../src/core/messages.js';
import type { StoredMessage } from '../../src/core/store.js';

const entry = (seq: number, message: ChatMessage, flags: Partial<StoredMessage> = {}): StoredMessage => ({ seq, message, isInit: false, isMarker: false, memoryRunId: null, ...flags });
const attach = (id: string, path: string) => ({ id, type: 'function' as const, function: { name: 'attach_file', arguments: JSON.stringify({ path }) } });
const other = (id: string) => ({ id, type: 'function' as const, function: { name: 'read_file', arguments: '{"path":"x"}' } });
const isFileTool = (name: string) => name === 'attach_file';

describe('answerFiles', () => {
  it('names the successful attach_file calls since the previous answer, in order', () => {
    const entries = [
      entry(0, { role: 'system', content: 'init' }, { isInit: true }),
      entry(1, { role: 'assistant', content: null, tool_calls: [attach('old', 'before.txt')] }),
      entry(2, { role: 'tool', tool_call_id: 'old', content: 'ok' }),
      entry(3, { role: 'assistant', content: 'the previous answer' }),
      entry(4, { role: 'user', content: 'Ada wrote:\n> more' }),
      entry(5, { role: 'assistant', content: null, tool_calls: [attach('a1', 'one.csv'), other('r1'), attach('a2', 'missing.csv')] }),
      entry(6, { role: 'tool', tool_call_id: 'a1', content: 'one.csv (1 KB) will be attached' }),
      entry(7, { role: 'tool', tool_call_id: 'r1', content: 'text' }),
      entry(8, { role: 'tool', tool_call_id: 'a2', content: 'Error: missing.csv is not a file in the workspace' }),
      entry(9, { role: 'user', content: '<memory-checkpoint n="1"/>' }, { isMarker: true }),
      entry(10, { role: 'assistant', content: null, tool_calls: [attach('a3', 'two.png')] }),
      entry(11, { role: 'tool', tool_call_id: 'a3', content: 'two.png will be attached' }),
      entry(12, { role: 'assistant', content: 'here they are' }),
    ];
    expect(answerFiles(entries, 12, isFileTool)).toEqual([{ callId: 'a1', path: 'one.csv' }, { callId: 'a3', path: 'two.png' }]);
    expect(answerFiles(entries, 3, isFileTool)).toEqual([{ callId: 'old', path: 'before.txt' }]);
    expect(answerFiles(entries, 99, isFileTool)).toEqual([]);
  });
});
