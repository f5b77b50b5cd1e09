// R23 on Slack: the approval card in the thread (the exact call, escaped; Approve / Deny / for this
// run), decided only by the session's starter, an admin or an approver; anyone else is told so
// only they see it and nothing changes; the card then says who decided what.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveApprovalPolicy } from '../../src/core/approval-policy.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { formBody, textOf, type FakeSlackApi, type SlackCall } from '../fakes/fake-slack-api.js';
import { conversation, requestsOf, scriptRoles } from '../support/model-script.js';
import { startSlackRig, type SlackRig } from '../support/slack-rig.js';
import { until } from '../support/wait.js';

const signingSecret = 'approval-secret';
const channel = 'C0APPROVE';
let rig: SlackRig;
let slack: FakeSlackApi;
let counter = 0;
const ran: string[] = [];

const recording = (name: string, extra: Pick<AnyTool, 'mcp'> = {}): AnyTool => defineTool({
  name,
  description: name,
  input: z.object({ command: z.string().optional(), issue: z.string().optional() }),
  execute: async (input: { command?: string | undefined; issue?: string | undefined }) => {
    ran.push(`${name}:${input.command ?? input.issue ?? ''}`);
    return `${name} done`;
  },
  ...extra,
}) as AnyTool;
const tools = [recording('shell'), recording('tracker__delete_issue', { mcp: { server: 'tracker', tool: 'delete_issue' } })];

beforeAll(async () => {
  const policy = resolveApprovalPolicy([{ tool: tools[0]!, group: 'shell' }, { tool: tools[1]!, group: 'mcp' }], 'shell,mcp', '');
  rig = await startSlackRig({
    signingSecret,
    users: [{ id: 'UADA', displayName: 'Ada' }, { id: 'UBOB', displayName: 'Bob' }, { id: 'UADM', displayName: 'Root' }],
    env: { ADMIN_USERS: 'UADM' },
    tools,
    approvals: { policy, timeoutMs: 60_000, pollMs: 60_000 },
  });
  slack = rig.slack;
  rig.harness.agent.runners.startSweeping();
});
afterAll(async () => {
  await rig.close();
});
beforeEach(() => {
  ran.length = 0;
  rig.harness.model.reset();
});

const blocksOf = (call: SlackCall) => JSON.stringify(call.args['blocks'] ?? '');

async function click(user: string, actionId: string, value: string, message: { ts: string; threadTs: string }): Promise<void> {
  const payload = {
    type: 'block_actions', team: { id: slack.teamId, domain: 'hippo' }, user: { id: user, team_id: slack.teamId },
    api_app_id: 'A1', token: 'legacy', trigger_id: `trigger-${++counter}`,
    container: { type: 'message', message_ts: message.ts, channel_id: channel, is_ephemeral: false, thread_ts: message.threadTs },
    channel: { id: channel, name: 'ops' }, message: { type: 'message', ts: message.ts, thread_ts: message.threadTs, text: '' },
    actions: [{ type: 'button', action_id: actionId, block_id: 'hippo_approval', value, action_ts: '1' }],
  };
  const response = await rig.post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded');
  expect(response.status).toBe(200);
}

/** The card of the thread's call that waits, and the approval's id its buttons carry. */
async function approvalCard(root: string): Promise<{ card: SlackCall; id: string; at: { ts: string; threadTs: string } }> {
  const card = await slack.waitForCall('chat.postMessage', (call) => call.args['thread_ts'] === root && blocksOf(call).includes('hippo_approval_approve'));
  const raw = card.args['blocks'];
  const blocks = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ elements?: Array<{ action_id?: string; value?: string }> }>;
  const id = blocks.flatMap((block) => block.elements ?? []).find((element) => element.action_id === 'hippo_approval_approve')?.value;
  if (!id) throw new Error('no approval id on the card');
  return { card, id, at: { ts: String(card.response?.['ts']), threadTs: root } };
}

/** The run's answer: it ends the run's task stream, or is posted where Slack refuses streams. */
function answered(text: string): Promise<void> {
  return until(() => slack.calls.some((call) => (call.method === 'chat.stopStream' || call.method === 'chat.postMessage') && JSON.stringify(call.args).includes(text)), 10_000, `the answer "${text}"`);
}

describe('Slack approval cards (R23)', () => {
  it('shows the exact call escaped, refuses a click by someone else quietly, and runs the call once on the starter\'s Approve', async () => {
    const command = 'rm -rf build <!channel> ```done``` & echo <@U999>';
    scriptRoles(rig.harness.model, { worker: [{ toolCalls: [{ id: 's1', name: 'shell', arguments: { command } }] }, { content: 'Build removed.' }] });
    const root = await rig.mention('clean the build');
    const { card, id, at } = await approvalCard(root);
    const blocks = blocksOf(card);
    expect(textOf(card)).toBe("✋ Hippo wants to run `shell` for Ada's request. Approve?");
    // The command as code: no mention or link can be forged, no backtick closes the block.
    expect(blocks).toContain('rm -rf build &lt;!channel&gt; `\u200b`\u200b`\u200bdone`\u200b`\u200b`\u200b &amp; echo &lt;@U999&gt;');
    expect(blocks).not.toContain('<!channel>');
    expect(blocks).toContain('hippo_approval_deny');
    expect(blocks).toContain('Approve shell for this run');
    // The status card says what it waits for.
    await until(() => slack.callsTo('chat.update').some((call) => textOf(call).startsWith('✋ Waiting for approval: `shell`')), 10_000, 'the status card');

    await click('UBOB', 'hippo_approval_approve', id, at);
    const refusal = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UBOB');
    expect(String(refusal.args['text'])).toContain('Only the person who started this session, an admin or an approver');
    expect((await rig.harness.stores.approvals.get(id))?.status).toBe('pending');
    expect(ran).toEqual([]);

    await click('UADA', 'hippo_approval_approve', id, at);
    await answered('Build removed.');
    expect(ran).toEqual([`shell:${command}`]);
    await until(() => slack.callsTo('chat.update').some((call) => call.args['ts'] === at.ts && /^✅ Approved by Ada at \d\d:\d\d UTC\.$/.test(textOf(call)) && !blocksOf(call).includes('hippo_approval_approve')), 10_000, 'the decided card');
    // The same click again: nothing runs twice, and the clicker is told.
    await click('UADA', 'hippo_approval_approve', id, at);
    const late = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && String(call.args['text']).startsWith('Already decided'));
    expect(String(late.args['text'])).toMatch(/^Already decided: ✅ Approved by Ada at/);
    expect(ran).toHaveLength(1);
  });

  it('lets an admin deny an MCP write, and the model is told who denied it', async () => {
    scriptRoles(rig.harness.model, { worker: [{ toolCalls: [{ id: 'd1', name: 'tracker__delete_issue', arguments: { issue: '#42' } }] }, { content: 'Left #42 alone.' }] });
    const root = await rig.mention('delete issue 42');
    const { card, id, at } = await approvalCard(root);
    expect(textOf(card)).toContain('(its server marks it destructive)');
    expect(blocksOf(card)).toContain('\\"issue\\": \\"#42\\"');
    await click('UADM', 'hippo_approval_deny', id, at);
    await answered('Left #42 alone.');
    expect(ran).toEqual([]);
    const worker = requestsOf(rig.harness.model.requests, 'worker').at(-1)!;
    const result = conversation(worker.body).find((message) => message['role'] === 'tool');
    expect(result?.['content']).toBe('Error: not run: Root denied this call. They gave no reason. Do not try it again unchanged; ask in the thread if it is still needed.');
    await until(() => slack.callsTo('chat.update').some((call) => call.args['ts'] === at.ts && textOf(call).startsWith('🚫 Denied by Root')), 10_000, 'the denied card');
  });

  it('answers a forged approval id with a line and changes nothing', async () => {
    const root = rig.nextTs();
    await click('UADA', 'hippo_approval_approve', 'not-an-id', { ts: root, threadTs: root });
    const answer = await slack.waitForCall('chat.postEphemeral', (call) => call.args['user'] === 'UADA' && call.args['thread_ts'] === root);
    expect(String(answer.args['text'])).toBe('This button no longer works: the call it asked about is gone.');
  });
});
