import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formBody, textOf, type FakeSlackApi, type SlackCall, markdownOf, feedbackBlocksOf } from '../fakes/fake-slack-api.js';
import { lastMessageText, type FakeReply } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import type { AgentHarness } from '../support/agent-harness.js';
import type { TestDatabase } from '../support/database.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'interaction-secret';
const channel = 'C0PROJECT';
let database: TestDatabase;
let slack: FakeSlackApi;
let harness: AgentHarness;
let rig: SlackRig;
let counter = 0;

const post = (body: string, contentType: string): Promise<Response> => rig.post(body, contentType);

async function slash(text: string, id: string): Promise<SlackCall> {
  const body = formBody({
    token: 'legacy', team_id: slack.teamId, channel_id: channel, user_id: 'UADA', user_name: 'ada', command: '/hippo', text,
    response_url: slack.responseUrl(id), trigger_id: `trigger-${id}`, api_app_id: 'A1',
  });
  const response = await post(body, 'application/x-www-form-urlencoded');
  expect(response.status).toBe(200);
  return slack.waitForCall(`response_url:${id}`);
}

const blocksOf = (call: SlackCall) => JSON.stringify(call.args['blocks'] ?? call.args['view'] ?? '');

beforeAll(async () => {
  // This workspace refuses markdown_text: answers fall back to mrkdwn.
  rig = await startSlackRig({ signingSecret, channel, slack: { markdownTextError: 'invalid_arguments' }, users: [{ id: 'UADA', displayName: 'Ada' }], settings: { contextWindow: 10_000 } });
  ({ database, slack, harness } = rig);
});

afterAll(async () => {
  await rig?.close();
});

describe('Slack memory notes', () => {
  it('posts a collapsed note; View opens the diff in a modal, 👍 marks it reviewed, Revert restores the document', async () => {
    harness.model.reset();
    let summarizerSteps = 0;
    harness.model.respond((body): FakeReply => {
      const role = roleOf(body);
      if (role === 'decider') return { content: 'KEEP_CONTEXT' };
      if (role === 'summarizer') {
        summarizerSteps += 1;
        if (summarizerSteps === 1) {
          return { toolCalls: [{ name: 'memory_write', arguments: { path: 'MAIN.md', content: '# Memory\n\nThe launch is on Friday.\nBudget: 10k.\n', expected_version: 1 } }] };
        }
        return { content: 'Memory updated.' };
      }
      // 400 of 10,000 tokens: past the 3% step, so the checkpoint after this answer forks memory.
      return { content: 'Noted: launch on Friday.', usage: { promptTokens: 400, cachedTokens: 300, completionTokens: 10 } };
    });
    // A channel of its own: its memory space starts at MAIN.md v1 whichever tests ran before.
    const notes = 'C0NOTES';
    const root = await rig.mention('the launch is on Friday, budget 10k', { channel: notes });
    const note = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && (call.args['metadata'] as { event_type?: string } | undefined)?.event_type === 'hippo_memory_updated');
    expect(note.args['thread_ts']).toBe(root);
    expect(textOf(note)).toMatch(/^🧠 Memory updated · MAIN\.md \+2 −1/);
    const metadata = note.args['metadata'] as { event_payload: { memoryRunId: string; versions: Array<{ path: string; version: number }> } };
    const runId = metadata.event_payload.memoryRunId;
    expect(metadata.event_payload.versions).toEqual([expect.objectContaining({ path: 'MAIN.md', version: 2, previousVersion: 1 })]);
    expect(blocksOf(note)).toContain('hippo_memory_revert');
    const noteTs = String(note.response?.['ts']);

    const at = { ts: noteTs, threadTs: root, channel: notes };
    await rig.click('hippo_memory_view', runId, at);
    const opened = await slack.waitForCall('views.open', (call) => JSON.stringify(call.args['view']).includes('The launch is on Friday.'));
    const view = opened.args['view'] as { type: string; title: { text: string }; blocks: Array<{ type: string; text?: { text: string } }> };
    expect(view.type).toBe('modal');
    expect(opened.args['trigger_id']).toMatch(/^trigger-/);
    expect(view.blocks.length).toBeLessThanOrEqual(100);
    const viewText = JSON.stringify(view.blocks);
    expect(viewText).toContain('MAIN.md +2 −1 (v1 → v2)');
    expect(viewText).toContain('+ The launch is on Friday.');
    expect(viewText).toContain('- Nothing remembered yet');
    for (const block of view.blocks) expect((block.text?.text ?? '').length).toBeLessThanOrEqual(3_000);

    await rig.click('hippo_memory_ack', runId, at);
    await slack.waitForCall('chat.postEphemeral', (call) => call.args['channel'] === notes && String(call.args['text']).includes('reviewed'));
    expect(await database.prisma.memoryDocumentVersion.findMany({ where: { memoryRunId: runId }, select: { reviewedBy: true } })).toEqual([{ reviewedBy: 'UADA' }]);

    await rig.click('hippo_memory_revert', runId, at);
    const reverted = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('↩️'));
    expect(textOf(reverted)).toBe('↩️ Ada reverted the memory change to MAIN.md');
    const { memorySpaceId } = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    const mainOfSpace = { where: { path: 'MAIN.md', spaceId: memorySpaceId } };
    const main = await database.prisma.memoryDocument.findFirstOrThrow(mainOfSpace);
    expect(main.version).toBe(3);
    expect(main.content).toContain('Nothing remembered yet');
    const latest = await database.prisma.memoryDocumentVersion.findFirstOrThrow({ where: { documentId: main.id, version: 3 } });
    expect(latest).toMatchObject({ authorKind: 'person', authorId: 'UADA', authorName: 'Ada' });

    // A second click does not revert again.
    await rig.click('hippo_memory_revert', runId, at);
    await slack.waitForCall('chat.postEphemeral', (call) => call.args['channel'] === notes && String(call.args['text']).includes('already reverted'));
    expect((await database.prisma.memoryDocument.findFirstOrThrow(mainOfSpace)).version).toBe(3);
  });

  it('shows a later change before reverting an older one (R13): Keep changes nothing, Undo both restores and tells the thread', async () => {
    harness.model.reset();
    harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'ok', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 2 } } : { content: 'KEEP_CONTEXT' }));
    const root = await rig.mention('keep notes');
    const session = await until(async () => (await database.prisma.session.findFirst({ where: { threadKey: root } })) !== null, 10_000, 'session').then(() => database.prisma.session.findFirstOrThrow({ where: { threadKey: root } }));
    const stores = harness.stores;
    const run = (round: number) => stores.memoryRuns.start({ sessionId: session.id, segmentId: session.currentSegmentId!, role: 'summarizer', round, forkPoint: 0 });
    const [runA, runB] = [await run(11), await run(12)];
    const main = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    // The session's first segment creates MAIN.md; on a loaded machine its row can come after the
    // session's (then A's change would be the document's first version, and reverting it removes it).
    await until(async () => (await stores.documents.read(main)) !== null, 10_000, 'MAIN.md of the new space');
    const before = await stores.documents.read(main);
    await stores.documents.write(main, '# Memory\nFact from A.\n', { kind: 'summarizer', memoryRunId: runA.id });
    const byB = await stores.documents.write(main, '# Memory\nFact from A.\nFact from B.\n', { kind: 'summarizer', memoryRunId: runB.id });

    await rig.click('hippo_memory_revert', runA.id, { ts: rig.nextTs(), threadTs: root });
    const opened = await slack.waitForCall('views.open', (call) => JSON.stringify(call.args['view']).includes('Undo both'));
    const view = opened.args['view'] as { private_metadata: string; blocks: Array<{ elements?: Array<{ action_id: string; value: string }> }> };
    expect(JSON.stringify(view.blocks)).toMatch(/MAIN\.md\* was changed again after this memory change \(v\d+ by background memory/);
    const undo = view.blocks.flatMap((block) => block.elements ?? []).find((element) => element.action_id === 'hippo_memory_undo_both')!;
    expect(JSON.parse(undo.value)).toMatchObject({ r: runA.id, v: byB.version });
    // Nothing is reverted before the person chose.
    expect((await stores.documents.read(main))?.version).toBe(byB.version);

    const inView = async (actionId: string, value: string) => {
      const payload = {
        type: 'block_actions', team: { id: slack.teamId }, user: { id: 'UADA', team_id: slack.teamId }, trigger_id: `trigger-${++counter}`,
        container: { type: 'view', view_id: 'V-revert' }, view: { id: 'V-revert', hash: 'h1', private_metadata: view.private_metadata },
        actions: [{ type: 'button', action_id: actionId, block_id: 'b', value, action_ts: '1' }],
      };
      expect((await post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded')).status).toBe(200);
    };
    await inView('hippo_memory_keep', undo.value);
    await slack.waitForCall('views.update', (call) => JSON.stringify(call.args['view']).includes('Nothing was changed'));
    expect((await stores.documents.read(main))?.version).toBe(byB.version);

    await inView('hippo_memory_undo_both', undo.value);
    await slack.waitForCall('views.update', (call) => JSON.stringify(call.args['view']).includes('Reverted MAIN.md, with the later changes'));
    const note = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).startsWith('↩️'));
    expect(textOf(note)).toBe('↩️ Ada reverted the memory change to MAIN.md');
    expect(await stores.documents.read(main)).toMatchObject({ content: before?.content, version: byB.version + 1 });
    // The same choice again: it was done already.
    await inView('hippo_memory_undo_both', undo.value);
    await slack.waitForCall('views.update', (call) => JSON.stringify(call.args['view']).includes('already reverted'));
  });

  it('answers malformed interactions and slash commands without a 500, and changes nothing', async () => {
    const versionsBefore = await database.prisma.memoryDocumentVersion.count();
    const errors: string[] = [];
    const payloads: Array<Record<string, unknown>> = [
      // Button values that are not JSON, or JSON of the wrong shape.
      ...['hippo_reset_view', 'hippo_view_page_next', 'hippo_memory_undo_both'].flatMap((actionId) => ['{not json', '{"r":1}', '"x"'].map((value) => ({
        type: 'block_actions', team: { id: slack.teamId }, user: { id: 'UADA' }, trigger_id: 't', channel: { id: channel }, message: { ts: '1.1' },
        actions: [{ type: 'button', action_id: actionId, block_id: 'b', value, action_ts: '1' }],
      }))),
      // No user, no actions, no team.
      { type: 'block_actions', team: { id: slack.teamId }, actions: [{ type: 'button', action_id: 'hippo_memory_revert', block_id: 'b', value: 'x', action_ts: '1' }] },
      { type: 'block_actions', user: { id: 'UADA' }, actions: [] },
      { type: 'block_actions' },
    ];
    for (const payload of payloads) {
      const response = await post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded');
      if (response.status >= 500) errors.push(`${response.status} for ${JSON.stringify(payload).slice(0, 120)}`);
    }
    // A slash command without response_url, and one without a user.
    for (const body of [
      formBody({ token: 'legacy', team_id: slack.teamId, channel_id: channel, user_id: 'UADA', command: '/hippo', text: 'status', trigger_id: 't' }),
      formBody({ token: 'legacy', team_id: slack.teamId, channel_id: channel, command: '/hippo', text: 'status', response_url: slack.responseUrl('no-user') }),
    ]) {
      const response = await post(body, 'application/x-www-form-urlencoded');
      if (response.status >= 500) errors.push(`${response.status} for a slash command ${body.slice(0, 80)}`);
    }
    expect(errors).toEqual([]);
    // Every unreadable button value is answered to its clicker, never thrown.
    await until(() => slack.callsTo('chat.postEphemeral').filter((call) => String(call.args['text']).startsWith('This button no longer works')).length === 9, 10_000, 'stale-button answers');
    expect(await database.prisma.memoryDocumentVersion.count()).toBe(versionsBefore);
  });

  it('acknowledges at once a payload no listener wants (an unknown type, a shortcut, a forged button or modal), with an empty 200', async () => {
    const base = { team: { id: slack.teamId }, user: { id: 'UADA' }, trigger_id: 't', token: 'legacy' };
    for (const payload of [
      { ...base, type: 'something_new' },
      { ...base, type: 'shortcut', callback_id: 'not_ours' },
      { ...base, type: 'message_action', callback_id: 'not_ours', channel: { id: channel }, message: { ts: '1.1' } },
      { ...base, type: 'block_suggestion', action_id: 'not_ours', block_id: 'b', value: 'x' },
      { ...base, type: 'block_actions', actions: [{ action_id: 'not_ours', block_id: 'b', type: 'button', value: 'x' }] },
      { ...base, type: 'view_submission', view: { id: 'V1', type: 'modal', callback_id: 'not_ours', state: { values: {} } } },
      { ...base, type: 'view_submission', view: { id: 'V2', type: 'modal', callback_id: 'hippo_no_such_modal', state: { values: {} } } },
    ]) {
      // Unacknowledged, Bolt would answer 404 after 3 s (and Slack show the person an error).
      const response = await post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded');
      expect({ type: payload.type, status: response.status, body: await response.text() }).toEqual({ type: payload.type, status: 200, body: '' });
    }
  });

  it('posts answers as mrkdwn when the workspace refuses markdown_text', async () => {
    harness.model.reset();
    harness.model.respond((body): FakeReply => (roleOf(body) === 'worker' ? { content: 'A plain answer.' } : { content: 'KEEP_CONTEXT' }));
    const root = await rig.mention('answer me');
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'A plain answer.' && call.response?.['ok'] === true);
    // Detected once, on the file's first answer (this one or an earlier test's): its Markdown
    // block with the feedback buttons refused, then its markdown_text, the same text sent again
    // as mrkdwn (without buttons: reactions count there), no Markdown tried after.
    const posts = slack.callsTo('chat.postMessage');
    const withMarkdown = posts.filter((call) => markdownOf(call.args) !== undefined);
    expect(withMarkdown.map((call) => [feedbackBlocksOf(call.args), call.args['markdown_text'] === undefined ? 'blocks' : 'markdown_text', call.response])).toEqual([
      [1, 'blocks', { ok: false, error: 'invalid_arguments' }], [0, 'markdown_text', { ok: false, error: 'invalid_arguments' }],
    ]);
    const refused = withMarkdown[1]!;
    const resent = posts.slice(posts.indexOf(refused) + 1).find((call) => textOf(call) === textOf(refused));
    expect(resent?.args['mrkdwn']).toBe('true');
    const answer = posts.filter((call) => call.args['thread_ts'] === root && textOf(call) === 'A plain answer.');
    expect(answer.map((call) => call.args['mrkdwn'])).toContain('true');
  });
});

describe('Slack run controls', () => {
  it('pauses at the next checkpoint when Pause is clicked, and continues on Resume', async () => {
    harness.model.reset();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    harness.model.respond(async (body): Promise<FakeReply> => {
      if (roleOf(body) !== 'worker') return { content: 'KEEP_CONTEXT' };
      if (lastMessageText(body).includes('long job')) {
        await gate;
        return { toolCalls: [{ name: 'memory_list', arguments: {} }], usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 5 } };
      }
      return { content: 'Finished the long job.', usage: { promptTokens: 120, cachedTokens: 100, completionTokens: 5 } };
    });
    const root = await rig.mention('run the long job');
    const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && blocksOf(call).includes('hippo_pause'));
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await harness.model.waitFor((request) => lastMessageText(request.body).includes('long job'));

    await rig.click('hippo_pause', session.id, { ts: String(card.response?.['ts']), threadTs: root });
    await harness.waitForEvent('pause-requested', (event) => event.session.id === session.id);
    release();
    await harness.waitForEvent('paused', (event) => event.session.id === session.id);
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ paused: true, pauseRequested: false });
    // Stopped after the tool results, before asking the model again.
    expect(harness.model.requests.filter((request) => roleOf(request.body) === 'worker' && request.body.prompt_cache_key === session.id)).toHaveLength(1);
    await until(() => slack.callsTo('chat.update').some((call) => call.args['ts'] === card.response?.['ts'] && textOf(call).startsWith('⏸️ Paused') && blocksOf(call).includes('hippo_resume')));

    await rig.click('hippo_resume', session.id, { ts: String(card.response?.['ts']), threadTs: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Finished the long job.');
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ paused: false });
  });

  it('cancels a hanging model call when Stop is clicked, shows who stopped it, and `@hippo stop` says nothing runs', async () => {
    harness.model.reset();
    harness.model.respond((body): FakeReply => (roleOf(body) !== 'worker' ? { content: 'KEEP_CONTEXT' } : lastMessageText(body).includes('forever') ? { hang: true } : { content: 'Back at it.' }));
    const root = await rig.mention('think forever');
    const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && blocksOf(call).includes('hippo_stop'));
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    await harness.model.waitFor((request) => lastMessageText(request.body).includes('forever'));
    await rig.click('hippo_stop', session.id, { ts: String(card.response?.['ts']), threadTs: root });
    const end = await harness.waitForEvent('run-end', (event) => event.session.id === session.id);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Ada' });
    await until(() => slack.callsTo('chat.update').some((call) => call.args['ts'] === card.response?.['ts'] && textOf(call).startsWith('⏹️ Stopped by Ada') && blocksOf(call).includes('hippo_resume') && !blocksOf(call).includes('hippo_stop')));
    expect(await database.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ paused: true, stopRequestedBy: null });
    await rig.mention('stop', { threadTs: root });
    const answer = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).includes('Nothing is running'));
    expect(textOf(answer)).toContain('`@hippo resume`');
    // A reply continues from a valid context: the stopped call left no assistant message.
    await rig.mention('try again briefly', { threadTs: root });
    await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call) === 'Back at it.');
  });
});

describe('Slack commands', () => {
  it('answers `@hippo status` in the thread and treats other mentions there as steers', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Sure.', usage: { promptTokens: 50, cachedTokens: 25, completionTokens: 2 } }));
    const root = await rig.mention('keep an eye on the build');
    await harness.waitForEvent('run-end', (event) => event.session.threadKey === root);
    await rig.mention('status', { threadTs: root });
    const status = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && textOf(call).includes('Status:'));
    expect(textOf(status)).toMatch(/\*Status:\* idle/);
    expect(textOf(status)).toContain('cache 50%');
    const session = await database.prisma.session.findFirstOrThrow({ where: { threadKey: root } });
    expect(await database.prisma.steerMessage.count({ where: { sessionId: session.id } })).toBe(1);
    await rig.mention('status of the build, please', { threadTs: root });
    await until(async () => (await database.prisma.steerMessage.count({ where: { sessionId: session.id } })) === 2);
  });

  it('answers /hippo ephemerally: help for an unknown word, a channel fallback for status, a hint for the rest', async () => {
    const unknown = await slash('frobnicate', 's1');
    expect(unknown.args['response_type']).toBe('ephemeral');
    expect(String(unknown.args['text'])).toContain('"frobnicate"');
    expect(String(unknown.args['text'])).toContain('/hippo pause');

    const status = await slash('status', 's2');
    expect(status.args['response_type']).toBe('ephemeral');
    expect(String(status.args['text'])).toContain('most recent Hippo session in this channel');
    expect(String(status.args['text'])).toContain('*Status:*');

    const pause = await slash('pause', 's3');
    expect(String(pause.args['text'])).toContain('Use this in a Hippo thread');
  });

  it('resets on `@hippo reset` and posts a reset note whose View shows what the new context started from', async () => {
    harness.model.reset();
    harness.model.respond(() => ({ content: 'Build 42 noted.', usage: { promptTokens: 200, cachedTokens: 0, completionTokens: 3 } }));
    const root = await rig.mention('remember build number 42');
    await harness.waitForEvent('run-end', (event) => event.session.threadKey === root);
    await rig.mention('reset', { threadTs: root });
    const note = await slack.waitForCall('chat.postMessage', (call) => (call.args['metadata'] as { event_type?: string } | undefined)?.event_type === 'hippo_context_reset');
    expect(note.args['thread_ts']).toBe(root);
    // Before: the last call's 200 prompt tokens plus its answer, as the next call would send it (R2).
    expect(textOf(note)).toMatch(/^♻️ Context reset · 2\d\d → [\d.k]+ tokens · 2 messages carried over$/);
    const blocks = note.args['blocks'] as Array<{ elements?: Array<{ action_id: string; value: string }> }>;
    const view = blocks[1]?.elements?.find((element) => element.action_id === 'hippo_reset_view');
    expect(view).toBeDefined();
    await rig.click('hippo_reset_view', view?.value ?? '', { ts: String(note.response?.['ts']), threadTs: root });
    const opened = await slack.waitForCall('views.open', (call) => JSON.stringify(call.args['view']).includes('Context reset'));
    const text = JSON.stringify(opened.args['view']);
    expect(text).toContain('the last 2 messages of the previous context');
    expect(text).toMatch(/MAIN\.md \(v\d+\) at that moment/);
    expect(text).toContain('# Memory');
  });
});
