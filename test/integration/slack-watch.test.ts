// Watching a run in Slack (docs/product.md "Watch"): the thread's status says what runs now, per
// thread; the answer streams as it forms and ends as normal replies, delivered once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitMessage } from '../../src/adapters/chat/split-message.js';
import { slackMessageLimit } from '../../src/adapters/slack/inbound.js';
import type { FakeSlackApi, FakeSlackMessage } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import { lastMessageText, type FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'watch-secret';
const channel = 'C0WATCH';
let rig: SlackRig;
let slack: FakeSlackApi;

const splitParts = (text: string) => splitMessage(text, { limit: slackMessageLimit });

/** The thread's message that shows `text` at its end, whole: posted, or a stream that stopped (a tool run's answer ends its task stream). */
async function shownWhole(threadTs: string, text: string, inChannel = channel): Promise<FakeSlackMessage> {
  const find = () => slack.threadMessages(inChannel, threadTs).find((message) => !message.streaming && (markdownOf(message) ?? '').endsWith(text));
  await until(() => find() !== undefined, 10_000, `"${text}" shown`);
  return find()!;
}
const statusCalls = (threadTs: string) => slack.callsTo('assistant.threads.setStatus').filter((call) => call.args['thread_ts'] === threadTs);

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, channel, slack: { threadStatusError: null }, users: [{ id: 'UADA', displayName: 'Ada' }] });
  slack = rig.slack;
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack thread status', () => {
  it('says which tool runs, and a refusal in one thread does not silence another', async () => {
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      const last = body.messages.at(-1);
      if (last?.['role'] === 'tool') return { content: 'Listed.', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 3 } };
      // The tool call comes after a pause, so the card (and the status) shows "thinking" first.
      return { delayMs: lastMessageText(body).includes('list') ? 1_200 : 0, toolCalls: [{ name: 'memory_list', arguments: {} }], usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 3 } };
    });
    const refused = rig.nextTs();
    slack.refuseThreadStatus(channel, refused);
    await rig.mention('list what you remember', { ts: refused });
    await shownWhole(refused, 'Listed.');
    expect(statusCalls(refused)).toHaveLength(1);

    const other = await rig.mention('list it here too');
    await shownWhole(other, 'Listed.');
    await until(() => statusCalls(other).some((call) => call.args['status'] === ''), 5_000, 'the status cleared');
    const shown = statusCalls(other).map((call) => [call.args['status'], call.args['loading_messages'] ?? []]);
    expect(shown[0]).toEqual(['is thinking…', ['Thinking…']]);
    expect(shown).toContainEqual(['is running memory_list…', ['Running memory_list…']]);
    expect(shown.at(-1)).toEqual(['', []]);
  });
});

/** A long answer in paragraphs, streamed over about three seconds. */
function longAnswer(paragraphs: number): string {
  return Array.from({ length: paragraphs }, (_unused, index) => `Paragraph ${index + 1}: ${'the answer forms word by word. '.repeat(6).trim()}`).join('\n\n');
}

describe('Slack streamed answers', () => {
  it('streams natively, at most once a second, and the final answer replaces the stream: its first part, the rest as new replies', async () => {
    const answer = longAnswer(18); // ~3,400 characters: two parts
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, chunkDelayMs: 7, usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 900 } }));
    const root = await rig.mention('explain at length');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    expect(started.args).toMatchObject({ channel, recipient_user_id: 'UADA', recipient_team_id: slack.teamId });
    const second = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').endsWith('(2/2)'));
    const streamTs = String(started.response?.['ts']);
    const stream = slack.messages.find((message) => message.ts === streamTs)!;
    await until(() => !stream.streaming, 5_000, 'the stream stopped');
    const [first] = splitParts(answer);
    expect(markdownOf(stream)).toBe(first);
    expect(String(markdownOf(second.args))).toBe(splitParts(answer)[1]);
    // The answer is not posted a second time: the thread holds the card, the stream and part 2.
    const replies = slack.threadMessages(channel, root).filter((message) => markdownOf(message) !== undefined);
    expect(replies.map((message) => message.ts)).toEqual([streamTs, String(second.response?.['ts'])]);
    // Throttled: a handful of outbox writes for ~3 s of tokens. (The interval itself is pinned with a
    // fake clock in answer-stream.test.ts; times seen here add the sender's delivery jitter.)
    const appends = slack.callsTo('chat.appendStream').filter((call) => call.args['ts'] === streamTs);
    expect(appends.length).toBeGreaterThanOrEqual(1);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const writes = await rig.database.prisma.outboxItem.count({ where: { sessionId: session.id, idempotencyKey: { startsWith: 'stream:' } } });
    expect(writes).toBeGreaterThanOrEqual(2);
    // At most one write a second while the tokens came (on a loaded machine they take longer to
    // come, and may take more writes): the start, one a second, and the answer that ends it.
    const streamedMs = appends.at(-1)!.at - started.at;
    expect(writes).toBeLessThanOrEqual(Math.floor(streamedMs / 1_000) + 3);
  });

  it('posts and edits at most once a second where Slack refuses streaming, and edits the post into the answer', async () => {
    const other = 'C0NOSTREAM';
    slack.script('chat.startStream', { error: 'not_allowed' });
    const answer = longAnswer(7);
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: answer, chunkDelayMs: 20, usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 400 } }));
    const root = await rig.mention('explain', { channel: other });
    await slack.waitForCall('chat.startStream', (call) => call.args['channel'] === other);
    const post = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && call.args['blocks'] === undefined);
    const ts = String(post.response?.['ts']);
    expect((post.args['metadata'] as { event_payload: Record<string, unknown> }).event_payload['idempotency_key']).toMatch(/^stream:/);
    await until(() => markdownOf(slack.messages.find((message) => message.ts === ts)) === answer, 10_000, 'the post edited into the answer');
    const edits = slack.callsTo('chat.update').filter((call) => call.args['ts'] === ts);
    expect(edits.length).toBeGreaterThanOrEqual(2);
    expect(edits.length).toBeLessThanOrEqual(5);
    expect(slack.callsTo('chat.appendStream').filter((call) => call.args['channel'] === other)).toHaveLength(0);
    expect(slack.threadMessages(other, root).filter((message) => markdownOf(message) !== undefined)).toHaveLength(1);
  });

  it('finishes the stream with a note when Stop cancels the model call mid-answer, and answers in a new message later', async () => {
    const partial = longAnswer(4);
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      // The first call streams some text, then hangs: the person presses Stop.
      return lastMessageText(body).includes('go on') ? { content: 'Picked up again.' } : { content: partial, chunkDelayMs: 5, hangAfterChunks: 60 };
    });
    const root = await rig.mention('start something long');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const streamTs = String(started.response?.['ts']);
    const session = await rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await rig.harness.agent.stopRun(session.id, 'Ada');
    const stream = slack.messages.find((message) => message.ts === streamTs)!;
    await until(() => stream.streaming === false, 5_000, 'the stream finished');
    expect(markdownOf(stream)).toMatch(/^Paragraph 1: [\s\S]*\n\n_\(stopped by Ada\)_$/);
    expect(partial.startsWith((markdownOf(stream) ?? '').replace(/\n\n_\(stopped by Ada\)_$/, ''))).toBe(true);
    // The next answer goes to a new position: a new message, the stopped one stays as it is.
    await rig.mention('go on', { threadTs: root });
    const next = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && markdownOf(call.args) === 'Picked up again.');
    expect(next.response?.['ts']).not.toBe(streamTs);
    expect(markdownOf(stream)).toMatch(/_\(stopped by Ada\)_$/);
  });

  it('streams a call tried again at the same position into the same message, then makes it the answer', async () => {
    const broken = longAnswer(3);
    const second = `Second attempt. ${longAnswer(2)}`;
    let calls = 0;
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      calls += 1;
      // The first call's connection drops mid-answer (not retried: text was shown); after
      // `resume` the same position is answered again, streaming for a little over a second.
      return calls === 1 ? { content: broken, chunkDelayMs: 25, dropAfterChunks: 60 } : { content: second, chunkDelayMs: 25 };
    });
    const root = await rig.mention('try your best');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const streamTs = String(started.response?.['ts']);
    const stream = slack.messages.find((message) => message.ts === streamTs)!;
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && String(markdownOf(call.args) ?? '').startsWith('⚠️'));
    await until(() => /_\(interrupted\)_$/.test(markdownOf(stream) ?? ''), 5_000, 'the broken stream finished');
    await rig.mention('resume', { threadTs: root });
    await until(() => markdownOf(stream) === second, 10_000, 'the second attempt replacing the stream');
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root)).toHaveLength(1);
    // While it formed, the message showed the second attempt's text (not only at the end).
    expect(slack.callsTo('chat.update').some((call) => call.args['ts'] === streamTs && String(markdownOf(call.args)).startsWith('Second attempt') && markdownOf(call.args) !== second)).toBe(true);
    // The only message with either attempt's words is the stream (besides it: the card, the error note, "Resuming").
    expect(slack.threadMessages(channel, root).filter((message) => /Paragraph|attempt/.test(markdownOf(message) ?? message.text ?? '')).map((message) => message.ts)).toEqual([streamTs]);
  });

  it('starts no stream for a response that only calls tools, however slowly it arrives', async () => {
    let step = 0;
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      step += 1;
      // ~1.5 s of tool-call chunks without a word of text.
      return step === 1 ? { toolCalls: [{ name: 'memory_search', arguments: { query: 'x'.repeat(400) } }], chunkDelayMs: 25 } : { content: 'Nothing found.' };
    });
    const root = await rig.mention('search for it');
    const answer = await shownWhole(root, 'Nothing found.');
    // The only stream is the run's task cards (slack-task-cards.test.ts), never an answer stream: the answer ends it.
    const streams = slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root);
    expect(streams.map((call) => call.args['task_display_mode'])).toEqual(['timeline']);
    expect(answer.ts).toBe(String(streams[0]?.response?.['ts']));
    expect(markdownOf(answer)).toBe('Nothing found.');
    expect(slack.threadMessages(channel, root).filter((message) => message.ts !== answer.ts && !JSON.stringify(message.blocks ?? '').includes('hippo_'))).toEqual([]);
  });

  it('keeps what the model said before calling tools as a finished message, and answers at the end of the task stream', async () => {
    const preamble = `Let me look into this. ${longAnswer(2)}`;
    let step = 0;
    rig.harness.model.respond((body): FakeReply => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      step += 1;
      return step === 1 ? { content: preamble, chunkDelayMs: 25, toolCalls: [{ name: 'memory_list', arguments: {} }] } : { content: 'Done looking.' };
    });
    const root = await rig.mention('look into it');
    const started = await slack.waitForCall('chat.startStream', (call) => call.args['thread_ts'] === root);
    const stream = slack.messages.find((message) => message.ts === String(started.response?.['ts']))!;
    const answer = await shownWhole(root, 'Done looking.');
    await until(() => stream.streaming === false, 5_000, 'the preamble finished');
    expect(markdownOf(stream)).toBe(preamble);
    expect(answer.ts).not.toBe(stream.ts);
    expect(answer.chunks?.at(-1)).toEqual({ type: 'markdown_text', text: 'Done looking.' });
  });

  it('posts a short answer at once, without a stream', async () => {
    rig.harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : { content: 'Short and sweet.' }));
    const root = await rig.mention('quick one');
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && markdownOf(call.args) === 'Short and sweet.');
    expect(slack.callsTo('chat.startStream').filter((call) => call.args['thread_ts'] === root)).toHaveLength(0);
  });
});
