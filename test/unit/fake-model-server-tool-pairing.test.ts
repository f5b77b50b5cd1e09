// The OpenAI fake refuses what Chat Completions refuses on tool-call pairing, in OpenAI's words,
// so a context that splits a call from its result (R6, R20) fails in tests as it would for users.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeModelServer, toolPairingError, type FakeModelServer } from '../fakes/fake-model-server.js';

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const call = (...ids: string[]): Message => ({ role: 'assistant', content: null, tool_calls: ids.map((id) => ({ id, type: 'function', function: { name: 'echo', arguments: '{}' } })) });
const result = (id: string): Message => ({ role: 'tool', tool_call_id: id, content: `echo ${id}` });
const user = (content: string): Message => ({ role: 'user', content });

let server: FakeModelServer;
let client: OpenAI;

beforeAll(async () => {
  server = await startFakeModelServer();
  client = new OpenAI({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

/** The status and error body the real client saw for `messages`. */
async function refusal(messages: Message[]): Promise<{ status: number | undefined; message: string; param: string | null | undefined }> {
  try {
    await client.chat.completions.create({ model: 'fake-model', messages });
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { status: error.status, message: (error.error as { message: string }).message, param: error.param };
    throw error;
  }
  return { status: 200, message: '', param: null };
}

describe('fake model server: tool-call pairing', () => {
  it('refuses a tool message that answers no preceding tool call (an orphaned result)', async () => {
    expect(await refusal([{ role: 'system', content: 'sys' }, user('[earlier messages were not carried over]'), result('c1'), user('go on')])).toEqual({
      status: 400,
      message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      param: 'messages.[2].role',
    });
    // A tool message after another message, even when a call with its id came earlier.
    expect((await refusal([user('go'), call('c1'), result('c1'), user('steer'), result('c1')])).param).toBe('messages.[4].role');
  });

  it('refuses an assistant message whose tool calls are not all answered right after it', async () => {
    const unanswered = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";
    expect(await refusal([user('go'), call('c1', 'c2'), result('c1'), user('next')])).toEqual({ status: 400, message: `${unanswered}c2`, param: 'messages.[1].role' });
    // At the end of the request too, and when a user message comes between a call and its result.
    expect((await refusal([user('go'), call('c1')])).message).toBe(`${unanswered}c1`);
    expect((await refusal([user('go'), call('c1'), user('steer'), result('c1')])).message).toBe(`${unanswered}c1`);
  });

  it('refuses a result whose id the calls before it do not have', async () => {
    expect(await refusal([user('go'), call('c1'), result('c2')])).toEqual({ status: 400, message: "Invalid parameter: 'tool_call_id' of 'c2' not found in 'tool_calls' of previous message.", param: 'messages.[2].tool_call_id' });
    expect((await refusal([user('go'), call('c1'), result('c1'), result('c1')])).param).toBe('messages.[3].tool_call_id');
  });

  it('answers paired calls and results, in any order within their group', async () => {
    expect((await refusal([user('go'), call('c1', 'c2'), result('c2'), result('c1'), call('c3'), result('c3'), user('next')])).status).toBe(200);
    expect(toolPairingError([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello', tool_calls: [] }, { role: 'user', content: 'bye' }])).toBeNull();
  });
});
