// The in-process scripted model (test/support/scripted-model.ts) keeps its promises to the tests
// that lean on it: replies in order per role, every call recorded, unused replies reported, the
// abort signal honoured.
import { describe, expect, it } from 'vitest';
import { CancelledError, ModelError } from '../../src/core/errors.js';
import type { ModelRequest } from '../../src/core/model-client.js';
import { ScriptedModel } from '../support/scripted-model.js';

const request = (text: string): ModelRequest => ({ model: 'm', messages: [{ role: 'user', content: text }], tools: [], cacheKey: 'k' });

describe('ScriptedModel', () => {
  it('answers each role from its own list, in order, and records every call', async () => {
    const model = new ScriptedModel({
      worker: [{ content: 'first' }, { toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }], usage: null }],
      decider: [{ content: 'KEEP_CONTEXT', usage: { promptTokens: 7, cachedTokens: 5, completionTokens: 1 } }],
    });
    const deltas: string[] = [];
    const first = await model.complete(request('a'), { role: 'worker', onTextDelta: (delta) => deltas.push(delta) });
    const decided = await model.complete(request('b'), { role: 'decider' });
    const second = await model.complete(request('c'), { role: 'worker' });
    expect(first.message).toEqual({ role: 'assistant', content: 'first' });
    expect(deltas).toEqual(['first']);
    expect(decided.usage).toEqual({ promptTokens: 7, cachedTokens: 5, completionTokens: 1 });
    expect(second.message.tool_calls).toEqual([{ id: 'c1', type: 'function', function: { name: 'echo', arguments: '{"text":"hi"}' } }]);
    expect(second.usage).toBeNull();
    expect(model.calls.map((call) => [call.role, call.replyIndex, call.request.messages[0]?.content])).toEqual([['worker', 0, 'a'], ['decider', 0, 'b'], ['worker', 1, 'c']]);
    expect(model.callsOf('worker')).toHaveLength(2);
    model.assertAllUsed();
  });

  it('reports the replies a test left unused, and a call with none left', async () => {
    const model = new ScriptedModel([{ content: 'one' }, { content: 'two' }]);
    await model.complete(request('a'), { role: 'summarizer' });
    expect(() => model.assertAllUsed()).toThrow('scripted model: unused 1 of 2 replies');
    await model.complete(request('b'), { role: 'worker' });
    model.assertAllUsed();
    await expect(model.complete(request('c'), { role: 'worker' })).rejects.toThrow(ModelError);
    expect(model.calls).toHaveLength(3);
  });

  it('ends a hanging call when its signal is aborted, and refuses a call whose signal already is', async () => {
    const model = new ScriptedModel({ worker: [{ hang: true }, { content: 'never' }] });
    const controller = new AbortController();
    const hanging = model.complete(request('a'), { role: 'worker', signal: controller.signal });
    controller.abort(new Error('Stop pressed'));
    await expect(hanging).rejects.toEqual(new CancelledError('Stop pressed'));
    await expect(model.complete(request('b'), { role: 'worker', signal: controller.signal })).rejects.toThrow('cancelled: Stop pressed');
    model.assertAllUsed();
  });

  it('fails a call with the scripted error', async () => {
    const model = new ScriptedModel([{ error: new ModelError('overloaded', true, 529) }]);
    await expect(model.complete(request('a'), { role: 'worker' })).rejects.toThrow('overloaded');
  });
});
