// The fake Slack refuses in stream calls what Slack refuses, so a renderer that sends what Slack
// would not take fails its tests: markdown_text with chunks, chunks lacking what their type needs,
// a display mode other than timeline or plan (or after the start), blocks before the stop; and in
// posts and edits markdown_text beside blocks or text, Markdown over 12,000 characters, over 50 blocks.
import { webApi } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedbackBlock } from '../../src/adapters/slack/feedback-buttons.js';
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
    expect(await refusal('chat.stopStream', { channel: 'D1', ts, blocks: [{ type: 'context_actions', elements: [] }] })).toBe('invalid_blocks');
    expect(await refusal('chat.stopStream', { channel: 'D1', ts, blocks: Array.from({ length: 51 }, () => feedbackBlock()) })).toBe('invalid_blocks');
    await client.apiCall('chat.stopStream', { channel: 'D1', ts, chunks: [{ type: 'markdown_text', text: 'The answer.' }], blocks: [feedbackBlock()] });
    const message = slack.messages.find((each) => each.ts === ts);
    expect(message).toMatchObject({ streaming: false, markdown_text: 'The answer.', blocks: [feedbackBlock()] });
    expect(message?.chunks).toHaveLength(3);
  });

  it('refuses in posts and edits what Slack refuses: markdown_text beside blocks or text or over 12,000 characters, markdown blocks over 12,000 together, over 50 blocks', async () => {
    const base = { channel: 'C1', thread_ts: '1.0' };
    expect(await refusal('chat.postMessage', { ...base, markdown_text: 'a', blocks: [feedbackBlock()] })).toBe('invalid_arguments');
    expect(await refusal('chat.postMessage', { ...base, markdown_text: 'a', text: 'a' })).toBe('invalid_arguments');
    expect(await refusal('chat.postMessage', { ...base, markdown_text: 'x'.repeat(12_001) })).toBe('msg_too_long');
    expect(await refusal('chat.postMessage', { ...base, text: 'a', blocks: [{ type: 'markdown', text: 'x'.repeat(6_000) }, { type: 'markdown', text: 'x'.repeat(6_001) }] })).toBe('msg_blocks_too_long');
    expect(await refusal('chat.postMessage', { ...base, text: 'a', blocks: [{ type: 'markdown', text: '' }] })).toBe('invalid_blocks');
    expect(await refusal('chat.postMessage', { ...base, text: 'a', blocks: Array.from({ length: 51 }, () => ({ type: 'divider' })) })).toBe('invalid_blocks');
    const posted = await client.apiCall('chat.postMessage', { ...base, text: 'a', blocks: [{ type: 'markdown', text: 'x'.repeat(12_000) }, feedbackBlock(), ...Array.from({ length: 48 }, () => ({ type: 'divider' }))] });
    const ts = String((posted as { ts?: string }).ts);
    expect(await refusal('chat.update', { channel: 'C1', ts, markdown_text: 'b', blocks: [feedbackBlock()] })).toBe('invalid_arguments');
    expect(await refusal('chat.update', { channel: 'C1', ts, text: 'b', blocks: [{ type: 'markdown', text: 'x'.repeat(12_001) }] })).toBe('msg_blocks_too_long');
    await client.apiCall('chat.update', { channel: 'C1', ts, text: 'b', blocks: [{ type: 'markdown', text: 'b' }, feedbackBlock()] });
    expect(slack.messages.find((each) => each.ts === ts)).toMatchObject({ text: 'b', blocks: [{ type: 'markdown', text: 'b' }, feedbackBlock()] });
  });
});
