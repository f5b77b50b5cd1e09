// R23: a call the approval policy names waits for a person; an approved call runs exactly once
// (across restarts, replicas and repeated clicks); a denied or expired call gets a tool result
// that says who denied it or that it expired; memory work goes on while the worker waits.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { openDatabase, type Database } from '../../src/adapters/storage/database.js';
import { PostgresWakeups } from '../../src/adapters/storage/wakeups.js';
import { resolveApprovalPolicy, type ApprovalSettings } from '../../src/core/approval-policy.js';
import type { ChatMessage } from '../../src/core/messages.js';
import type { ThreadAddress } from '../../src/core/store.js';
import { defineTool, type AnyTool, type Tool } from '../../src/core/tool.js';
import { createLogger } from '../../src/log.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { at, conversation, gate, requestsOf, scriptRoles } from '../support/model-script.js';
import { startSession } from '../support/sessions.js';

let database: TestDatabase;
let model: FakeModelServer;
const closers: Array<() => Promise<void>> = [];
/** Every tool call that really ran, as "<tool>:<argument>". */
const ran: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeModelServer();
});
afterAll(async () => {
  await model.close();
  await database.drop();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  model.reset();
  ran.length = 0;
});

function tool(name: string, extra: Partial<Tool<{ value?: string; command?: string }>> = {}): AnyTool {
  return defineTool({
    name,
    description: `${name} for tests`,
    input: z.object({ value: z.string().optional(), command: z.string().optional() }),
    execute: async (input) => {
      ran.push(`${name}:${input.command ?? input.value ?? ''}`);
      return `${name} ran ${input.command ?? input.value ?? ''}`;
    },
    ...extra,
  }) as AnyTool;
}

const shell = tool('shell');
const deleteIssue = tool('tracker__delete_issue', { mcp: { server: 'tracker', tool: 'delete_issue', destructiveHint: true } });
const listIssues = tool('tracker__list_issues', { mcp: { server: 'tracker', tool: 'list_issues', readOnlyHint: true } });
const note = tool('note');
const tools = [shell, deleteIssue, listIssues, note];
const groups: Record<string, string> = { shell: 'shell', tracker__delete_issue: 'mcp', tracker__list_issues: 'mcp', note: 'workspace' };

/** The shipped default policy (shell, mcp) over the test tools; a long poll, so wake-ups must work. */
function approvals(timeoutMs = 60_000): ApprovalSettings {
  const policy = resolveApprovalPolicy(tools.map((each) => ({ tool: each, group: groups[each.name]! })), 'shell,mcp', '');
  return { policy, timeoutMs, pollMs: 60_000 };
}

async function harnessWith(settings: ApprovalSettings = approvals(), options: { replica?: Parameters<typeof createAgentHarness>[0]['replica']; database?: Database } = {}): Promise<AgentHarness> {
  const harness = await createAgentHarness({ database: options.database ?? database, model, tools, approvals: settings, ...(options.replica ? { replica: options.replica } : {}) });
  harness.agent.runners.startSweeping();
  closers.push(() => harness.close());
  return harness;
}

const call = (id: string, name: string, args: Record<string, string>) => ({ id, name, arguments: args });

/** The tool messages the model was sent in its latest worker request. */
function toolResults(): Record<string, string> {
  const last = requestsOf(model.requests, 'worker').at(-1);
  const messages = last ? conversation(last.body) : [];
  return Object.fromEntries(messages.filter((message) => message['role'] === 'tool').map((message) => [String(message['tool_call_id']), String(message['content'])]));
}

async function start(harness: AgentHarness, thread: ThreadAddress, text = 'clean up the build'): Promise<string> {
  const { session } = await harness.agent.submit(personMessage(thread, text), { startSession: true });
  return session!.id;
}

describe('tool approvals (R23)', () => {
  it('holds a shell command until a person approves it, then runs it once; a second click changes nothing', async () => {
    const harness = await harnessWith();
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'rm -rf build' })] }, { content: 'cleaned' }] });
    const sessionId = await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    expect(asked.approval).toMatchObject({ tool: 'shell', status: 'pending', requestedBy: 'Ada', arguments: JSON.stringify({ command: 'rm -rf build' }) });
    // The worker waits at the call: nothing ran, no next model call, and status says so.
    const status = await harness.agent.status(sessionId);
    expect(status.state).toBe('running');
    expect(status.approvals.map((each) => each.status)).toEqual(['pending']);
    expect(ran).toEqual([]);
    expect(requestsOf(model.requests, 'worker')).toHaveLength(1);

    const clicks = await Promise.all([
      harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' }),
      harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' }),
    ]);
    expect(clicks.map((click) => click.decided).sort()).toEqual([false, true]);
    await harness.waitForEvent('answer');
    expect(ran).toEqual(['shell:rm -rf build']);
    expect(toolResults()['s1']).toBe('shell ran rm -rf build');
    const after = await harness.agent.status(sessionId);
    expect(after.approvals[0]).toMatchObject({ status: 'approved', decidedByName: 'Ada', scope: 'call' });
    expect(after.approvals[0]!.decidedAt).toBeInstanceOf(Date);
  });

  it('holds an MCP tool its server does not mark read-only; a read-only one runs at once', async () => {
    const harness = await harnessWith();
    scriptRoles(model, { worker: [{ toolCalls: [call('l1', 'tracker__list_issues', { value: 'open' }), call('d1', 'tracker__delete_issue', { value: '#42' })] }, { content: 'deleted' }] });
    await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    expect(asked).toMatchObject({ approval: { tool: 'tracker__delete_issue' }, destructive: true });
    expect(ran).toEqual(['tracker__list_issues:open']);
    await harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    await harness.waitForEvent('answer');
    expect(ran).toEqual(['tracker__list_issues:open', 'tracker__delete_issue:#42']);
    expect(harness.events.filter((event) => event.type === 'approval-requested')).toHaveLength(1);
  });

  it('answers a denied call with a tool result naming who denied it and why, and the worker goes on', async () => {
    const harness = await harnessWith();
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'kubectl delete ns prod' })] }, { content: 'understood' }] });
    await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    await harness.agent.decideApproval(asked.approval.id, 'deny', { id: 'bea', name: 'Bea' }, 'not on prod');
    await harness.waitForEvent('answer');
    expect(ran).toEqual([]);
    expect(toolResults()['s1']).toBe('Error: not run: Bea denied this call. Their reason: "not on prod". Do not try it again unchanged; ask in the thread if it is still needed.');
    const decided = await harness.waitForEvent('approval-decided', (event) => event.first);
    expect(decided.approval).toMatchObject({ status: 'denied', decidedByName: 'Bea', note: 'not on prod' });
  });

  it('denies a call nobody decides in time, with a note, and a late click changes nothing', async () => {
    const harness = await harnessWith(approvals(1_000));
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'make deploy' })] }, { content: 'it expired' }] });
    await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    await harness.waitForEvent('answer');
    expect(ran).toEqual([]);
    expect(toolResults()['s1']).toBe('Error: not run: nobody approved this call within 1 second, so it expired. Ask in the thread if it is still needed.');
    const late = await harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    expect(late).toMatchObject({ decided: false, approval: { status: 'expired' } });
  });

  it('stops asking for a tool approved for the rest of the run, for that tool only and that run only', async () => {
    const harness = await harnessWith();
    scriptRoles(model, {
      worker: [
        { toolCalls: [call('s1', 'shell', { command: 'one' }), call('s2', 'shell', { command: 'two' }), call('d1', 'tracker__delete_issue', { value: '#1' })] },
        { toolCalls: [call('s3', 'shell', { command: 'three' })] },
        { content: 'run one done' },
        { toolCalls: [call('s4', 'shell', { command: 'four' })] },
        { content: 'run two done' },
      ],
    });
    const thread = newThread();
    await start(harness, thread);
    const first = await harness.waitForEvent('approval-requested');
    expect(first.approval.tool).toBe('shell');
    await harness.agent.decideApproval(first.approval.id, 'approve-run', { id: 'ada', name: 'Ada' });
    // The other shell call runs without a card; the MCP tool still asks.
    const second = await harness.waitForEvent('approval-requested', (event) => event.approval.id !== first.approval.id);
    expect(second.approval.tool).toBe('tracker__delete_issue');
    expect(ran).toEqual(['shell:one', 'shell:two']);
    await harness.agent.decideApproval(second.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    await harness.waitForEvent('answer', (event) => event.text === 'run one done');
    expect(ran).toEqual(['shell:one', 'shell:two', 'tracker__delete_issue:#1', 'shell:three']);
    // A new message begins a new run: shell asks again.
    await harness.agent.submit(personMessage(thread, 'once more'), { startSession: false });
    const third = await harness.waitForEvent('approval-requested', (event) => event.approval.callId === 's4');
    await harness.agent.decideApproval(third.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    await harness.waitForEvent('answer', (event) => event.text === 'run two done');
    expect(ran.at(-1)).toBe('shell:four');
    expect(harness.events.filter((event) => event.type === 'approval-requested')).toHaveLength(3);
  });

  it('answers a call that waits "not run" on a Stop, and closes its approval', async () => {
    const harness = await harnessWith();
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'deploy' })] }, { content: 'after the stop' }] });
    const sessionId = await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    await harness.agent.stopRun(sessionId, 'Bea');
    await harness.waitForEvent('run-end', (event) => event.reason === 'stopped');
    const closed = await harness.waitForEvent('approval-decided');
    expect(closed.approval).toMatchObject({ status: 'cancelled', note: 'stopped by Bea' });
    expect((await harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' })).decided).toBe(false);
    await harness.agent.resume(sessionId);
    await harness.waitForEvent('answer');
    expect(ran).toEqual([]);
    expect(toolResults()['s1']).toBe('Error: not run: stopped by Bea before it began.');
  });

  it('pauses at a call that waits; approved while paused, it runs once on resume', async () => {
    const harness = await harnessWith();
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'migrate' })] }, { content: 'migrated' }] });
    const sessionId = await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    await harness.agent.pause(sessionId);
    await harness.waitForEvent('paused');
    expect((await harness.agent.status(sessionId)).state).toBe('paused');
    await harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    expect(ran).toEqual([]);
    await harness.agent.resume(sessionId);
    await harness.waitForEvent('answer');
    expect(ran).toEqual(['shell:migrate']);
    // The same approval, not a second card.
    expect(harness.events.filter((event) => event.type === 'approval-requested').map((event) => event.approval.id)).toEqual([asked.approval.id]);
  });

  it('lets a summarizer run finish while the worker waits for a person (R1)', async () => {
    const harness = await createAgentHarness({ database, model, tools, approvals: approvals(), settings: { contextWindow: 10_000, stepPercent: 10 } });
    harness.agent.runners.startSweeping();
    closers.push(() => harness.close());
    const held = gate();
    scriptRoles(model, {
      // The first batch passes a step: a summarizer forks, and answers only once the worker waits.
      worker: [at(2_500, { toolCalls: [call('n1', 'note', { value: 'a' })] }), at(2_600, { toolCalls: [call('s1', 'shell', { command: 'ls' })] }), at(2_700, { content: 'done' })],
      summarizer: async () => {
        await held.promise;
        return { content: 'nothing new' };
      },
    });
    await start(harness, newThread());
    const asked = await harness.waitForEvent('approval-requested');
    held.open();
    const ended = await harness.waitForEvent('memory-run-end', (event) => event.role === 'summarizer');
    expect(ended.status).toBe('succeeded');
    expect((await harness.stores.approvals.get(asked.approval.id))?.status).toBe('pending');
    expect(ran).toEqual(['note:a']);
    await harness.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    await harness.waitForEvent('answer');
    expect(ran).toEqual(['note:a', 'shell:ls']);
  });
});

describe('tool approvals across restarts and replicas (R23)', () => {
  it('asks again with the same card after a restart, and the approval then runs the call once', async () => {
    const first = await createAgentHarness({ database, model, tools, approvals: approvals() });
    first.agent.runners.startSweeping();
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'restart-proof' })] }, { content: 'ran after the restart' }] });
    const sessionId = await start(first, newThread());
    const asked = await first.waitForEvent('approval-requested');
    await first.close();

    const second = await harnessWith();
    await second.agent.recover();
    const again = await second.waitForEvent('approval-requested', (event) => event.session.id === sessionId);
    expect(again.approval.id).toBe(asked.approval.id);
    await second.agent.decideApproval(again.approval.id, 'approve', { id: 'ada', name: 'Ada' });
    await second.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(toolResults()['s1']).toBe('shell ran restart-proof');
    expect(ran).toEqual(['shell:restart-proof']);
  });

  it('runs a call approved while no process drove it once, without asking again', async () => {
    const harness = await harnessWith();
    const { sessionId, approvalId } = await crashedWhileWaiting(harness, 'approved-while-down');
    await harness.stores.approvals.decide(approvalId, { status: 'approved', byId: 'ada', byName: 'Ada' });
    model.enqueue({ content: 'done after the crash' });
    await harness.agent.recover();
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(ran).toEqual(['shell:approved-while-down']);
    expect(harness.events.filter((event) => event.type === 'approval-requested')).toHaveLength(0);
  });

  it('refuses an approval that comes after the timeout while no process drove, and the next drive answers it expired', async () => {
    const harness = await harnessWith(approvals(1_000));
    const { sessionId, approvalId } = await crashedWhileWaiting(harness, 'too-late', 1);
    await new Promise((resolve) => setTimeout(resolve, 50)); // past expires_at on the database's clock
    expect((await harness.stores.approvals.decide(approvalId, { status: 'approved', byId: 'ada', byName: 'Ada' })).decided).toBe(false);
    model.enqueue({ content: 'it had expired' });
    await harness.agent.recover();
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(ran).toEqual([]);
    expect(toolResults()['s1']).toContain('so it expired');
  });

  it('does not run again a call that had begun when its process died after the approval', async () => {
    const harness = await harnessWith();
    const { sessionId, approvalId, segmentId } = await crashedWhileWaiting(harness, 'began-then-crashed');
    await harness.stores.approvals.decide(approvalId, { status: 'approved', byId: 'ada', byName: 'Ada' });
    await harness.stores.context.markToolCallStarted(segmentId, 3, 's1');
    model.enqueue({ content: 'checked it' });
    await harness.agent.recover();
    await harness.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(ran).toEqual([]);
    expect(toolResults()['s1']).toContain('was interrupted');
  });

  it('runs a call once when the same click reaches two replicas at once', async () => {
    const log = createLogger('silent');
    const replica = async (name: string) => {
      const connection = await openDatabase({ databaseUrl: database.url, dataDir: '/nonexistent', log });
      const wakeups = await PostgresWakeups.start(connection.pool!, database.url, log);
      const harness = await harnessWith(approvals(), {
        database: connection,
        replica: { owner: name, wakeups, leases: createLeaseStore(connection.prisma, connection.pool), leaseTtlMs: 10_000, sweepIntervalMs: 300, leaseIdleGraceMs: 0 },
      });
      closers.splice(closers.length - 1, 0, async () => {
        await wakeups.close();
        await connection.close();
      });
      return harness;
    };
    const a = await replica('replica-a');
    const b = await replica('replica-b');
    scriptRoles(model, { worker: [{ toolCalls: [call('s1', 'shell', { command: 'once' })] }, { content: 'ran once' }] });
    const sessionId = await start(a, newThread());
    const asked = await a.waitForEvent('approval-requested');
    // The click is delivered to both replicas (and twice to the one that does not drive).
    const clicks = await Promise.all([
      b.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' }),
      a.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' }),
      b.agent.decideApproval(asked.approval.id, 'approve', { id: 'ada', name: 'Ada' }),
    ]);
    expect(clicks.filter((click) => click.decided)).toHaveLength(1);
    await a.waitForEvent('answer', (event) => event.session.id === sessionId);
    expect(ran).toEqual(['shell:once']);
    expect([...a.events, ...b.events].filter((event) => event.type === 'approval-decided' && event.first)).toHaveLength(1);
  });
});

/** A session left as a process that died while its shell call waited would leave it. */
async function crashedWhileWaiting(harness: AgentHarness, command: string, timeoutMs = 60_000): Promise<{ sessionId: string; approvalId: string; segmentId: string }> {
  const { stores } = harness;
  const session = await startSession(stores, newThread());
  const { segment } = await stores.context.load(session.id);
  const messages: ChatMessage[] = [
    { role: 'system', content: 'init' },
    { role: 'user', content: 'memory' },
    { role: 'user', content: 'Ada wrote:\n> run it' },
    { role: 'assistant', content: null, tool_calls: [{ id: 's1', type: 'function', function: { name: 'shell', arguments: JSON.stringify({ command }) } }] },
  ];
  for (const [seq, message] of messages.entries()) {
    await stores.context.append(segment.id, { seq, message, isInit: seq < 2, isMarker: false, memoryRunId: null });
  }
  const { approval } = await stores.approvals.request({ sessionId: session.id, segmentId: segment.id, messageSeq: 3, callId: 's1', tool: 'shell', arguments: JSON.stringify({ command }), runStartStep: 0, timeoutMs });
  return { sessionId: session.id, approvalId: approval.id, segmentId: segment.id };
}
