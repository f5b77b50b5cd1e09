// The fake Slack refuses in stream calls what Slack refuses, so a renderer that sends what Slack
// would not take fails its tests: markdown_text with chunks, chunks lacking what their type needs,
// a display mode other than timeline or plan (or after the start), blocks before the stop.
import { webApi } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.js';

let slack: FakeSlackApi;
let client: webApi.WebClient;

beforeAll(async () => {
  slack = await startFakeSlackApi();
  client = new webApi.WebClient('xoxb-test', { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
});
afterAll(async () => {
  await slack?.close();
});

const refusal = async (method: string, args: Record<string, unknown>) => (await client.apiCall(method, args).then(() => 'ok', (error: { data?: { error?: string } }) => error.data?.error ?? 'failed'));

describe('fake Slack streams', () => {
  it('refuses what Slack refuses, and keeps the chunks and the blocks of what it takes', async () => {
    const base = { channel: 'D1', thread_ts: '1.0' };
    const task = { type: 'task_update', id: 't1', title: 'web_fetch', status: 'in_progress' };
    expect(await refusal('chat.startStream', { ...base, markdown_text: 'a', chunks: [task] })).toBe('invalid_arguments');
    expect(await refusal('chat.startStream', { ...base, chunks: [{ ...task, status: 'running' }] })).toBe('invalid_chunks');
    expect(await refusal('chat.startStream', { ...base, chunks: [{ type: 'markdown_text', text: '' }] })).toBe('invalid_chunks');
    expect(await refusal('chat.startStream', { ...base, chunks: [{ type: 'plan_update' }] })).toBe('invalid_chunks');
    expect(await refusal('chat.startStream', { ...base, chunks: [task], task_display_mode: 'cards' })).toBe('invalid_arguments');
    expect(await refusal('chat.startStream', { ...base, markdown_text: 'x'.repeat(12_001) })).toBe('msg_too_long');
    const started = await client.apiCall('chat.startStream', { ...base, chunks: [task], task_display_mode: 'plan' });
    const ts = String((started as { ts?: string }).ts);
    expect(await refusal('chat.appendStream', { channel: 'D1', ts, chunks: [task], task_display_mode: 'plan' })).toBe('invalid_arguments');
    expect(await refusal('chat.appendStream', { channel: 'D1', ts, markdown_text: 'b', blocks: [] })).toBe('invalid_arguments');
    await client.apiCall('chat.appendStream', { channel: 'D1', ts, chunks: [{ ...task, status: 'complete', output: 'done' }] });
    await client.apiCall('chat.stopStream', { channel: 'D1', ts, chunks: [{ type: 'markdown_text', text: 'The answer.' }], blocks: [{ type: 'context_actions', elements: [] }] });
    const message = slack.messages.find((each) => each.ts === ts);
    expect(message).toMatchObject({ streaming: false, markdown_text: 'The answer.', blocks: [{ type: 'context_actions', elements: [] }] });
    expect(message?.chunks).toHaveLength(3);
  });
});
