import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SlackAdapter } from '../../src/adapters/slack/index.js';
import { signedHeaders, textOf, type FakeSlackApi, markdownOf } from '../fakes/fake-slack-api.js';
import { lastMessageText } from '../fakes/fake-model-server.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { takeDatabaseAway } from '../support/database-faults.js';
import { until } from '../support/wait.js';

const signingSecret = 'test-signing-secret';
const channel = 'C0GENERAL';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let adapter: SlackAdapter;
let eventsUrl: string;
let counter = 0;

function envelope(event: Record<string, unknown>, eventId = `Ev${++counter}`): Record<string, unknown> {
  return { token: 'legacy', team_id: slack.teamId, api_app_id: 'A1', type: 'event_callback', event_id: eventId, event_time: 1, event };
}

async function postEvent(body: unknown, headers: Record<string, string> = {}, sign = true): Promise<Response> {
  const text = JSON.stringify(body);
  return fetch(eventsUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(sign ? signedHeaders(signingSecret, text) : {}), ...headers },
    body: text,
  });
}

function mention(text: string, ts: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> ${text}`, ts, channel, event_ts: ts, ...extra };
}

function reply(text: string, ts: string, threadTs: string, user = 'UBOB'): Record<string, unknown> {
  return { type: 'message', channel_type: 'channel', user, text, ts, thread_ts: threadTs, channel, event_ts: ts };
}

const posts = (threadTs: string) => slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === threadTs);
const reactions = (method: string, ts: string) => slack.callsTo(method).filter((call) => call.args['timestamp'] === ts).map((call) => String(call.args['name']));

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }] });
  ({ database, slack, harness, adapter, eventsUrl } = rig);
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack events', () => {
  it('answers url_verification and is connected', async () => {
    const response = await postEvent({ type: 'url_verification', challenge: 'abc123', token: 'legacy' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ challenge: 'abc123' });
    expect(adapter.connected()).toBe(true);
  });

  it('refuses an unsigned, a badly signed, a stale or a future-dated request with 401 and stores nothing', async () => {
    const ts = rig.nextTs();
    const body = envelope(mention('do not store me', ts));
    const counts = async () => [await database.prisma.processedEvent.count(), await database.prisma.session.count(), await database.prisma.steerMessage.count()];
    const before = await counts();
    expect((await postEvent(body, {}, false)).status).toBe(401);
    expect((await postEvent(body, { 'x-slack-signature': 'v0=deadbeef', 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) }, false)).status).toBe(401);
    const text = JSON.stringify(body);
    const stale = signedHeaders(signingSecret, text, Math.floor(Date.now() / 1000) - 6 * 60);
    expect((await postEvent(body, stale, false)).status).toBe(401);
    // Dated ahead: it could be replayed until that date plus five minutes.
    const ahead = signedHeaders(signingSecret, text, Math.floor(Date.now() / 1000) + 6 * 60);
    expect((await postEvent(body, ahead, false)).status).toBe(401);
    // Half a minute ahead is clock skew, not an attack: a URL verification dated so is answered.
    const verification = { type: 'url_verification', token: 'legacy', challenge: 'skewed' };
    const skewed = await postEvent(verification, signedHeaders(signingSecret, JSON.stringify(verification), Math.floor(Date.now() / 1000) + 30), false);
    expect(skewed.status).toBe(200);
    expect(await skewed.text()).toContain('skewed');
    // Nothing stored, whichever tests ran before.
    expect(await counts()).toEqual(before);
    expect(await database.prisma.steerMessage.count({ where: { text: { contains: 'do not store me' } } })).toBe(0);
  });

  it('starts a session on a mention and answers in its thread; a reply steers it with 👀 then ✅', async () => {
    harness.model.reset();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The first answer waits on the gate, so the reply arrives while the worker is busy.
    harness.model.respond(async (body) => {
      const last = lastMessageText(body);
      if (last.includes('plan the launch')) {
        await gate;
        return { content: 'Here is a **plan**: step one.' };
      }
      if (last.includes('add a budget')) return { content: 'Budget added: 10k.' };
      return { content: 'ok' };
    });
    const root = rig.nextTs();
    const response = await postEvent(envelope(mention('plan the launch', root)));
    expect(response.status).toBe(200);
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    // Acknowledged before the answer: the model's answer still waits on the gate.
    expect(harness.events.some((event) => event.type === 'answer' && event.session.id === session.id)).toBe(false);
    expect(session).toMatchObject({ platform: 'slack', workspaceId: slack.teamId, channelId: channel });
    const steer = await database.prisma.steerMessage.findFirstOrThrow({ where: { sessionId: session.id } });
    expect(steer).toMatchObject({ platformMessageKey: `slack:${slack.teamId}:${channel}:${root}`, authorName: 'Ada', text: 'plan the launch' });

    const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && JSON.stringify(call.args['blocks'] ?? '').includes('hippo_pause'));
    expect(card.args['channel']).toBe(channel);

    // The reply comes while the worker waits for the model: it is taken at the next checkpoint.
    await harness.model.waitFor((request) => lastMessageText(request.body).includes('plan the launch'));
    const replyTs = rig.nextTs();
    expect((await postEvent(envelope(reply('please add a budget', replyTs, root)))).status).toBe(200);
    await slack.waitForCall('reactions.add', (call) => call.args['timestamp'] === replyTs && call.args['name'] === 'eyes');
    release();
    await slack.waitForCall('chat.postMessage', (call) => textOf(call).includes('Budget added'));
    await slack.waitForCall('reactions.add', (call) => call.args['timestamp'] === replyTs && call.args['name'] === 'white_check_mark');
    expect(reactions('reactions.add', replyTs)).toEqual(['eyes', 'white_check_mark']);
    await until(() => reactions('reactions.remove', replyTs).includes('eyes'));

    const answers = posts(root).filter((call) => markdownOf(call.args) !== undefined).map(textOf);
    expect(answers).toEqual(['Here is a **plan**: step one.', 'Budget added: 10k.']);
    // The reply was taken at the checkpoint after the first answer: the model saw it quoted with the author.
    const second = harness.model.requests.find((request) => lastMessageText(request.body).includes('add a budget'));
    expect(lastMessageText(second?.body ?? { messages: [] })).toBe('Bob wrote:\n> please add a budget');
    // The card ends as done, edited in place.
    await until(() => slack.callsTo('chat.update').some((call) => call.args['ts'] === card.response?.['ts'] && textOf(call).includes('Done')));
  });

  it('handles a retried event and the app_mention + message pair of one message once', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Only once.' }));
    const root = rig.nextTs();
    const event = envelope(mention('count me once', root), 'EvRetry1');
    const [first, retry] = await Promise.all([postEvent(event), postEvent(event, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' })]);
    expect([first.status, retry.status]).toEqual([200, 200]);
    // The same message as a plain message event (message.channels), with its own event id.
    const asMessage = { type: 'message', channel_type: 'channel', user: 'UADA', text: `<@${slack.botUserId}> count me once`, ts: root, channel, event_ts: root };
    expect((await postEvent(envelope(asMessage, 'EvRetry2'))).status).toBe(200);
    expect((await postEvent(envelope(asMessage, 'EvRetry2'), { 'x-slack-retry-num': '2' })).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Only once.');
    await harness.waitForEvent('run-end', (event) => event.session.threadKey === root);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    expect(await database.prisma.steerMessage.count({ where: { sessionId: session.id } })).toBe(1);
    expect(posts(root).filter((call) => textOf(call) === 'Only once.')).toHaveLength(1);
    // Only this session's calls: the harness is shared by the file's tests.
    expect(harness.model.requests.filter((request) => request.body.prompt_cache_key === session.id)).toHaveLength(1);
  });

  it('skips a retry of chatter it ignored, even after a session came to the thread', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Here now.' }));
    const root = rig.nextTs();
    const chatter = envelope(reply('not for the bot', rig.nextTs(), root), 'EvChatter1');
    expect((await postEvent(chatter)).status).toBe(200);
    expect((await postEvent(envelope(mention('join this thread', rig.nextTs(), { thread_ts: root })))).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Here now.');
    expect((await postEvent(chatter, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' })).status).toBe(200);
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    expect((await database.prisma.steerMessage.findMany({ where: { sessionId: session.id } })).map((steer) => steer.text)).not.toContain('not for the bot');
  });

  it('gives a reply taken at once ✅ alone, without 👀 first', async () => {
    harness.model.reset();
    harness.model.respond((body) => ({ content: lastMessageText(body).includes('second') ? 'Second done.' : 'First done.' }));
    const root = rig.nextTs();
    expect((await postEvent(envelope(mention('first', root)))).status).toBe(200);
    await harness.waitForEvent('run-end', (event) => event.session.threadKey === root);
    const replyTs = rig.nextTs();
    expect((await postEvent(envelope(reply('second', replyTs, root)))).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Second done.');
    await slack.waitForCall('reactions.add', (call) => call.args['timestamp'] === replyTs && call.args['name'] === 'white_check_mark');
    // Past the 1 s a queued steer waits for its 👀.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(reactions('reactions.add', replyTs)).toEqual(['white_check_mark']);
    expect(reactions('reactions.remove', replyTs)).toEqual([]);
  });

  it('ignores bot messages, its own messages and chatter in threads without a session', async () => {
    const root = rig.nextTs();
    const before = await database.prisma.steerMessage.count();
    await postEvent(envelope({ type: 'message', subtype: 'bot_message', bot_id: 'BOTHER', text: `<@${slack.botUserId}> hi`, ts: root, channel }));
    await postEvent(envelope({ type: 'message', user: slack.botUserId, bot_id: slack.botId, text: 'my own post', ts: rig.nextTs(), channel }));
    await postEvent(envelope({ type: 'app_mention', user: 'UOTHERBOT', bot_id: 'BOTHER', text: `<@${slack.botUserId}> hi`, ts: rig.nextTs(), channel }));
    // Bob is known by now: his reply goes straight to submit, which finds no session either.
    await postEvent(envelope(reply('just chatting', rig.nextTs(), root)));
    expect(await database.prisma.steerMessage.count()).toBe(before);
    expect(await database.prisma.session.count({ where: { threadKey: root } })).toBe(0);
  });

  it('reads an existing thread once when mentioned in it, then uses its own history', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Read it.' }));
    const root = rig.nextTs();
    const earlier = rig.nextTs();
    const mentionTs = rig.nextTs();
    slack.setThread(channel, root, [
      { ts: root, user: 'UADA', text: 'Which database should we use?' },
      { ts: earlier, user: 'UBOB', text: 'Postgres, surely' },
      { ts: mentionTs, user: 'UADA', text: `<@${slack.botUserId}> what do you think?` },
    ]);
    await postEvent(envelope(mention('what do you think?', mentionTs, { thread_ts: root })));
    await postEvent(envelope({ ...reply(`<@${slack.botUserId}> what do you think?`, mentionTs, root, 'UADA') }));
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Read it.');
    const steer = await database.prisma.steerMessage.findFirstOrThrow({ where: { platformMessageKey: `slack:${slack.teamId}:${channel}:${mentionTs}` } });
    expect(steer.text).toContain('Ada: Which database should we use?\nBob: Postgres, surely');
    expect(steer.text.endsWith('what do you think?')).toBe(true);
    expect(steer.text).not.toContain('<@');
    await harness.waitForEvent('run-end', (event) => event.session.threadKey === root);
    await postEvent(envelope(reply('and for caching?', rig.nextTs(), root)));
    await until(async () => (await database.prisma.steerMessage.count({ where: { sessionId: steer.sessionId } })) === 2);
    expect(slack.callsTo('conversations.replies').filter((call) => call.args['ts'] === root)).toHaveLength(1);
  });

  it('updates a queued reply when it is edited and withdraws it when it is deleted', async () => {
    harness.model.reset();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    harness.model.respond(async (body) => {
      if (lastMessageText(body).includes('slow task')) await gate;
      return { content: 'done' };
    });
    const root = rig.nextTs();
    await postEvent(envelope(mention('slow task', root)));
    await harness.model.waitFor((request) => lastMessageText(request.body).includes('slow task'));
    const [edited, deleted] = [rig.nextTs(), rig.nextTs()];
    await postEvent(envelope(reply('first version', edited, root)));
    await postEvent(envelope(reply('never mind', deleted, root)));
    await postEvent(envelope({ type: 'message', subtype: 'message_changed', channel, ts: rig.nextTs(), message: { type: 'message', user: 'UBOB', text: 'second version', ts: edited, thread_ts: root } }));
    await postEvent(envelope({ type: 'message', subtype: 'message_deleted', channel, ts: rig.nextTs(), deleted_ts: deleted, previous_message: { ts: deleted } }));
    const key = (ts: string) => `slack:${slack.teamId}:${channel}:${ts}`;
    expect(await database.prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: key(edited) } })).toMatchObject({ text: 'second version', status: 'queued' });
    expect(await database.prisma.steerMessage.findUniqueOrThrow({ where: { platformMessageKey: key(deleted) } })).toMatchObject({ status: 'withdrawn' });
    release();
    await harness.waitForEvent('steer-taken', (event) => event.steers.some((steer) => steer.platformMessageKey === key(edited)));
    const taken = await harness.model.waitFor((request) => JSON.stringify(request.body.messages).includes('second version'));
    expect(JSON.stringify(taken.body.messages)).not.toContain('first version');
    expect(JSON.stringify(taken.body.messages)).not.toContain('never mind');
  });

  it('starts a session per DM thread without a mention', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Hello in private.' }));
    const ts = rig.nextTs();
    await postEvent(envelope({ type: 'message', channel_type: 'im', user: 'UADA', text: 'hi hippo', ts, channel: 'D0ADA', event_ts: ts }));
    await slack.waitForCall('chat.postMessage', (call) => call.args['channel'] === 'D0ADA' && call.args['thread_ts'] === ts && textOf(call) === 'Hello in private.');
  });

  it('splits a long answer into numbered replies without cutting a code block, and retries after a rate limit', async () => {
    harness.model.reset();
    const code = ['```ts', ...Array.from({ length: 60 }, (_unused, index) => `export const value${index} = compute(${index}); // keep together`), '```'].join('\n');
    const prose = (label: string) => Array.from({ length: 25 }, (_unused, index) => `${label} sentence ${index} explains one more detail.`).join(' ');
    const long = [`# Report\n\n${prose('Intro')}`, code, prose('Middle'), code, prose('End')].join('\n\n');
    harness.model.respond(() => ({ content: long }));
    slack.script('chat.postMessage', { rateLimitSeconds: 1 });
    const root = rig.nextTs();
    await postEvent(envelope(mention('write the report', root)));
    await harness.waitForEvent('answer', (event) => event.session.threadKey === root);
    await until(() => posts(root).filter((call) => /\(\d+\/\d+\)$/.test(textOf(call))).length >= 2 && posts(root).some((call) => textOf(call).includes('End sentence 24')));
    // The card's post met the rate limit and went out after Retry-After; nothing was lost.
    const limited = slack.calls.findIndex((call) => call.method === 'chat.postMessage' && call.response === undefined);
    expect(limited).toBeGreaterThanOrEqual(0);
    const sameWrite = (call: (typeof slack.calls)[number]) => call.method === 'chat.postMessage' && JSON.stringify(call.args) === JSON.stringify(slack.calls[limited]!.args);
    expect(slack.calls.findIndex((call, index) => index > limited && sameWrite(call) && call.response !== undefined)).toBeGreaterThan(limited);
    const parts = posts(root).filter((call) => markdownOf(call.args) !== undefined).map(textOf);
    const total = parts.length;
    expect(total).toBeGreaterThan(2);
    parts.forEach((part, index) => {
      expect(part.length).toBeLessThanOrEqual(3_000);
      expect(part.endsWith(`(${index + 1}/${total})`)).toBe(true);
      expect((part.match(/^```/gm) ?? []).length % 2).toBe(0);
    });
    const joined = parts.join('\n');
    for (let index = 0; index < 60; index += 1) expect(joined).toContain(`export const value${index} = compute(${index}); // keep together`);
  });

  it('stores a message with NUL characters and answers one, instead of answering 500 and losing them', async () => {
    harness.model.reset();
    harness.model.respond((body) => ({ content: lastMessageText(body).includes('second') ? 'Echo\u0000d back.' : 'Got it\u0000.' }));
    const root = rig.nextTs();
    const response = await postEvent(envelope(mention('a page said \u0000\u0000 here', root)));
    expect(response.status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Got it\uFFFD.');
    const steer = await database.prisma.steerMessage.findFirstOrThrow({ where: { platformMessageKey: `slack:${slack.teamId}:${channel}:${root}` } });
    expect(steer.text).toBe('a page said \uFFFD\uFFFD here');
    // A reply with NUL, while the session exists: stored and answered too.
    await postEvent(envelope(reply('second \u0000 message', rig.nextTs(), root)));
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Echo\uFFFDd back.');
  });

  it('answers 500 while the database is away, so Slack retries, and stores the retry once it is back', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Stored after all.' }));
    const root = rig.nextTs();
    const body = envelope(mention('while the database fails over', root));
    const away = await takeDatabaseAway(database.name);
    try {
      expect((await postEvent(body)).status).toBe(500);
    } finally {
      await away.restore();
    }
    expect((await postEvent(body, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_error' })).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Stored after all.');
    expect(await database.prisma.steerMessage.count({ where: { platformMessageKey: `slack:${slack.teamId}:${channel}:${root}` } })).toBe(1);
  });

  it('stores an oversized message cut to Slack\'s limit with a visible mark', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Read it.' }));
    const root = rig.nextTs();
    expect((await postEvent(envelope(mention(`start ${'x'.repeat(3_000_000)}`, root)))).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Read it.');
    const steer = await database.prisma.steerMessage.findFirstOrThrow({ where: { platformMessageKey: `slack:${slack.teamId}:${channel}:${root}` } });
    expect(steer.text.length).toBeLessThanOrEqual(40_000);
    expect(steer.text).toMatch(/\[… [\d,]+ more characters were cut\]$/);
  });

  it('posts an error note saying the session can be resumed, and asks for the thread\'s status only until Slack refuses it there', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ status: 400, errorMessage: 'model refused the request' }));
    const root = rig.nextTs();
    await postEvent(envelope(mention('this will fail', root)));
    const note = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('⚠️'));
    expect(textOf(note)).toContain('`@hippo resume`');
    expect(slack.callsTo('assistant.threads.setStatus').filter((call) => call.args['thread_ts'] === root)).toHaveLength(1);
  });
});
