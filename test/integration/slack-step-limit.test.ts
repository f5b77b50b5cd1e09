// R21 in Slack, through the real Bolt receiver and the fake Slack Web API: a model that never
// stops calling tools is paused by the system after RUN_MAX_STEPS worker calls (memory forks not
// counted), the thread is told once why and how to go on, the card offers Resume, and a reply or
// Resume continues with a fresh count. A reset in the middle of a run does not start it again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textOf, type FakeSlackApi, type SlackCall, markdownOf } from '../fakes/fake-slack-api.js';
import { lastMessageText, type FakeReply, type FakeRequestBody } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'steps-secret';
const channel = 'C0STEPS';
const maxSteps = 4;
let rig: SlackRig;
let slack: FakeSlackApi;

const blocksOf = (call: SlackCall) => JSON.stringify(call.args['blocks'] ?? '');
const posted = (root: string, prefix: string) => slack.callsTo('chat.postMessage').filter((call) => call.args['thread_ts'] === root && textOf(call).startsWith(prefix));
const stepNote = `⏸️ I stopped after ${maxSteps} steps (model calls) without finishing: that is the limit for one run, so a task cannot loop on unattended. Nothing is lost: reply here, or press Resume (\`@hippo resume\`), and I continue.`;

/** What each role's requests of one session were, by the session id the requests carry. */
function requestsOf(sessionId: string, role: 'worker' | 'summarizer' | 'decider'): number {
  return rig.harness.model.requests.filter((request) => request.body.prompt_cache_key === sessionId && roleOf(request.body) === role).length;
}

/**
 * The worker script: a tool call at every step (the context grows by 700 tokens a step, so memory
 * forks at every checkpoint), unless `answer` says the call should answer instead.
 */
function scriptLoopingWorker(answer: (body: FakeRequestBody) => string | null, decide: (body: FakeRequestBody) => string = () => 'Still relevant.\nKEEP_CONTEXT'): void {
  rig.harness.model.reset();
  rig.harness.model.respond((body): FakeReply => {
    const role = roleOf(body);
    if (role === 'summarizer') return { content: 'no change', usage: { promptTokens: 100, cachedTokens: 90, completionTokens: 5 } };
    if (role === 'decider') return { content: decide(body), usage: { promptTokens: 100, cachedTokens: 90, completionTokens: 5 } };
    const usage = { promptTokens: 1_000 + 700 * body.messages.length, cachedTokens: 0, completionTokens: 5 };
    const text = answer(body);
    if (text !== null) return { content: text, usage };
    // Like a page that says "read ?page=N+1": the model always wants one more.
    return { toolCalls: [{ name: 'memory_list', arguments: {} }], usage };
  });
}

async function sessionOf(root: string): Promise<{ id: string }> {
  await until(async () => (await rig.database.prisma.session.count({ where: { threadKey: root } })) === 1, 10_000, 'the session');
  return rig.database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
}

/** Waits until the session's runner has nothing left to do (the pause is stored, the note emitted). */
async function settled(sessionId: string): Promise<void> {
  await (await rig.harness.agent.runners.peek(sessionId))?.whenIdle();
}

/** The step-limit notes core emitted for a session (each becomes one thread note). */
const stepNotes = (sessionId: string) => rig.harness.events.filter((event) => event.type === 'step-limit' && event.session.id === sessionId);

beforeAll(async () => {
  rig = await startSlackRig({ signingSecret, channel, users: [{ id: 'UADA', displayName: 'Ada' }], settings: { contextWindow: 40_000, runMaxSteps: maxSteps } });
  slack = rig.slack;
});

afterAll(async () => {
  await rig?.close();
});

describe('the step limit in Slack (R21)', { timeout: 60_000 }, () => {
  it('pauses a model that never stops calling tools after exactly RUN_MAX_STEPS worker calls, says so once, and a reply goes on to an answer', async () => {
    scriptLoopingWorker((body) => (lastMessageText(body).includes('wrap up') ? 'Wrapped up: page 4 was enough.' : null));
    const root = await rig.mention('read the pages until the end');
    // A loaded machine: the first run of the file also warms the adapter up.
    const note = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('⏸️ I stopped'), 20_000);
    expect(textOf(note)).toBe(stepNote);
    const session = await sessionOf(root);
    await settled(session.id);

    // Exactly the limit: every result of the last batch stored, no call after it.
    expect(requestsOf(session.id, 'worker')).toBe(maxSteps);
    expect(rig.harness.events.filter((event) => event.type === 'tool-call-end' && event.session.id === session.id)).toHaveLength(maxSteps);
    // Memory forked along the way and is no step.
    expect(requestsOf(session.id, 'summarizer')).toBeGreaterThan(0);
    expect(requestsOf(session.id, 'decider')).toBeGreaterThan(0);
    expect(await rig.database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ paused: true, pauseRequested: false, workerSteps: maxSteps, runStartStep: 0 });
    const ends = rig.harness.events.filter((event) => event.type === 'run-end' && event.session.id === session.id);
    expect(ends.map((event) => (event as { reason: string }).reason)).toEqual(['step-limit']);
    // The card says why, and offers Resume.
    await until(() => slack.callsTo('chat.update').some((call) => textOf(call).startsWith('⏸️ Paused at the step limit') && blocksOf(call).includes('hippo_resume')), 10_000, 'the card');

    await rig.reply('thanks, wrap up now', root);
    await until(() => posted(root, 'Wrapped up').length === 1, 10_000, 'the answer after the reply');
    await settled(session.id);
    expect(requestsOf(session.id, 'worker')).toBe(maxSteps + 1);
    expect(posted(root, '⏸️ I stopped')).toHaveLength(1);
    expect(stepNotes(session.id)).toHaveLength(1);
    expect(await rig.database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ paused: false, workerSteps: maxSteps + 1, runStartStep: maxSteps });
  });

  it('continues a run paused at the limit when Resume is clicked, with a fresh count', async () => {
    // After Resume the model needs three more steps, then answers: a count that went on from the
    // limit would stop it again before its first call.
    let afterResume: number | null = null;
    scriptLoopingWorker(() => {
      if (afterResume === null) return null;
      afterResume += 1;
      return afterResume > maxSteps - 1 ? 'All pages read.' : null;
    });
    const root = await rig.mention('read every page');
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('⏸️ I stopped'), 20_000);
    const session = await sessionOf(root);
    await settled(session.id);
    expect(requestsOf(session.id, 'worker')).toBe(maxSteps);
    const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && blocksOf(call).includes('hippo_pause'));

    afterResume = 0;
    await rig.click('hippo_resume', session.id, { ts: String(card.response?.['ts']), threadTs: root });
    // The answer of a run that called tools ends its task stream.
    const answered = () => slack.threadMessages(channel, root).filter((message) => (markdownOf(message) ?? '').endsWith('All pages read.'));
    await until(() => answered().length === 1, 10_000, 'the answer after Resume');
    await settled(session.id);
    expect(requestsOf(session.id, 'worker')).toBe(2 * maxSteps);
    expect(posted(root, '⏸️ I stopped')).toHaveLength(1);
    expect(stepNotes(session.id)).toHaveLength(1);
  });

  it('does not start the count again when the context is reset in the middle of a run', async () => {
    // The first decider of the thread asks for a reset; the run goes on in the new context.
    let decided = 0;
    scriptLoopingWorker(() => null, () => (++decided === 1 ? 'Old pages are done with.\nRESET_CONTEXT' : 'Still relevant.\nKEEP_CONTEXT'));
    const root = await rig.mention('read the pages, all of them');
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('⏸️ I stopped'), 20_000);
    const session = await sessionOf(root);
    await settled(session.id);
    expect(rig.harness.events.some((event) => event.type === 'context-reset' && event.session.id === session.id)).toBe(true);
    expect(await rig.database.prisma.segment.count({ where: { sessionId: session.id } })).toBe(2);
    expect(requestsOf(session.id, 'worker')).toBe(maxSteps);
    expect(stepNotes(session.id)).toEqual([expect.objectContaining({ steps: maxSteps, maxSteps })]);
  });
});
