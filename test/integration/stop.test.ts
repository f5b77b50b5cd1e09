// A person's Stop (docs/product.md "Watch"): the model call and tools in flight end at once, every
// tool call keeps a result, no partial answer is stored, and the session waits until a reply.
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/core/events.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { shellTools } from '../../src/tools/shell.js';
import { detectShellSandbox } from '../../src/tools/shell-sandbox.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { conversation, shape } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';

/** A tool that never finishes and ignores its signal (the worst case for a Stop). */
function stuckTool(): { tool: AnyTool; started: Promise<void> } {
  let started: () => void = () => undefined;
  const startedPromise = new Promise<void>((resolve) => (started = resolve));
  const tool = defineTool({
    name: 'stuck_step',
    description: 'Never finishes.',
    input: z.object({}),
    execute: async () => {
      started();
      return new Promise<string>(() => undefined);
    },
  }) as AnyTool;
  return { tool, started: startedPromise };
}

const echo = defineTool({ name: 'echo', description: 'Echoes.', input: z.object({ text: z.string() }), execute: async ({ text }) => `echo ${text}` }) as AnyTool;

const bed = useTestBed();

/** The session's events of `types` (default: the run's start and end and a Stop), in the order they came. */
function typesInOrder(events: readonly AgentEvent[], sessionId: string, types: readonly string[] = ['run-start', 'stop-requested', 'run-end']): string[] {
  return events.filter((event) => 'session' in event && event.session.id === sessionId && types.includes(event.type)).map((event) => event.type);
}

/** True while the process exists and is not a zombie. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('Stop', () => {
  it('cancels a hanging model call at once, stores no partial answer, and a reply continues', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ hang: true }, { content: 'picked up again' });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'think hard'), { startSession: true });
    await bed.model.waitForRequests(1);
    expect(await harness.agent.stopRun(session!.id, 'Grace')).toBe('stopping');
    const end = await harness.waitForEvent('run-end', (event) => event.session.id === session!.id);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Grace' });
    // The call never answers by itself: the run ended because of the Stop, after it.
    expect(typesInOrder(harness.events, session!.id)).toEqual(['run-start', 'stop-requested', 'run-end']);
    // The fake saw the client go away: the request is closed.
    await bed.model.waitFor((request) => request.index === 0 && request.respondedAt !== undefined);
    const stored = await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } });
    expect(stored).toMatchObject({ paused: true, pauseRequested: false, stopRequestedBy: null });
    const usage = await bed.database.prisma.modelCall.findFirstOrThrow({ where: { sessionId: session!.id } });
    expect(usage.error).toContain('stopped by Grace');
    // A reply resumes; the context holds no assistant message from the stopped call.
    await harness.agent.submit(personMessage(thread, 'go on'), { startSession: false });
    const answer = await harness.waitForEvent('answer', (event) => event.session.id === session!.id);
    expect(answer.text).toBe('picked up again');
    expect(shape(conversation(bed.model.requests[1]!.body))).toEqual(['user:think hard', 'user:go on']);
  });

  it('cancels a running tool that ignores its signal, answers it and the unstarted call "stopped", and keeps the context valid', async () => {
    const stuck = stuckTool();
    const harness = await bed.harness({ tools: [stuck.tool, echo] });
    bed.model.enqueue(
      { toolCalls: [{ id: 'c_stuck', name: 'stuck_step', arguments: {} }, { id: 'c_echo', name: 'echo', arguments: { text: 'later' } }] },
      { content: 'resumed after the stop' },
    );
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'run both'), { startSession: true });
    await stuck.started;
    expect(await harness.agent.stopRun(session!.id, 'Ada')).toBe('stopping');
    const end = await harness.waitForEvent('run-end', (event) => event.session.id === session!.id);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Ada' });
    // R9/R12: both calls have results; the stopped call is not "interrupted", the other never ran.
    const rows = await bed.database.prisma.contextMessage.findMany({ where: { role: 'tool', segment: { sessionId: session!.id } }, orderBy: { seq: 'asc' } });
    const results = rows.map((row) => JSON.parse(row.content) as { tool_call_id: string; content: string });
    expect(results.map((result) => result.tool_call_id)).toEqual(['c_stuck', 'c_echo']);
    expect(results[0]?.content).toMatch(/^Error: stopped by Ada while it ran/);
    expect(results[1]?.content).toBe('Error: not run: stopped by Ada before it began.');
    expect(harness.events.some((event) => event.type === 'tool-call-start' && event.call.id === 'c_echo')).toBe(false);
    expect(bed.model.requests).toHaveLength(1);
    await harness.agent.resume(session!.id);
    await harness.waitForEvent('answer', (event) => event.text === 'resumed after the stop');
    expect(shape(conversation(bed.model.requests[1]!.body))).toEqual(['user:run both', 'assistant→[c_stuck,c_echo]', 'tool(c_stuck)', 'tool(c_echo)']);
  });

  it('ends the run as stopped when the Stop comes after the answer was computed, before its checkpoint', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'the answer' });
    const thread = newThread();
    // Nothing is in flight to abort when the Stop comes: the answer is being stored. The checkpoint
    // after it is where the run learns of the Stop.
    const context = harness.stores.context;
    const append = context.append.bind(context);
    let stopping: Promise<unknown> | undefined;
    context.append = async (segmentId, entry, options) => {
      await append(segmentId, entry, options);
      if (entry.message.role === 'assistant' && entry.message.content === 'the answer') {
        const session = await harness.stores.sessions.find(thread);
        stopping ??= harness.agent.stopRun(session!.id, 'Grace');
        await stopping;
      }
    };
    const { session } = await harness.agent.submit(personMessage(thread, 'answer me'), { startSession: true });
    const end = await harness.waitForEvent('run-end', (event) => event.session.id === session!.id);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Grace' });
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).toMatchObject({ paused: true, stopRequestedBy: null });
  });

  it('does not wait for the safe point a pause is waiting for: a Stop after Pause ends the run at once', async () => {
    const stuck = stuckTool();
    const harness = await bed.harness({ tools: [stuck.tool] });
    bed.model.enqueue({ toolCalls: [{ id: 'c_wait', name: 'stuck_step', arguments: {} }] });
    const { session } = await harness.agent.submit(personMessage(newThread(), 'wait for it'), { startSession: true });
    await stuck.started;
    await harness.agent.pause(session!.id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(harness.events.some((event) => event.type === 'run-end')).toBe(false); // the pause waits for the tool
    await harness.agent.stopRun(session!.id, 'Ada');
    const end = await harness.waitForEvent('run-end', (event) => event.session.id === session!.id, 2_000);
    expect(end).toMatchObject({ reason: 'stopped', stoppedBy: 'Ada' });
    expect(await bed.database.prisma.session.findUniqueOrThrow({ where: { id: session!.id } })).toMatchObject({ paused: true, pauseRequested: false });
  });

  it('kills a running shell command with everything it started', async () => {
    const base = await mkdtemp(path.join(tmpdir(), 'hippo-stop-'));
    const root = path.join(base, 'workspaces');
    const sandbox = await detectShellSandbox({ root, allowUnsandboxed: true, only: 'none' });
    const harness = await bed.harness({ tools: shellTools({ root, env: { PATH: process.env['PATH'] }, sandbox, timeoutMs: 60_000 }) });
    bed.model.enqueue({ toolCalls: [{ id: 'sh1', name: 'shell', arguments: { command: 'sleep 30 & echo $! > child.pid; wait' } }] });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'wait a while'), { startSession: true });
    await harness.waitForEvent('tool-call-start');
    const workspace = path.join(root, session!.id);
    const { readFile } = await import('node:fs/promises');
    let pid = 0;
    for (let tries = 0; tries < 100 && pid === 0; tries += 1) {
      pid = Number((await readFile(path.join(workspace, 'child.pid'), 'utf8').catch(() => '')).trim()) || 0;
      if (pid === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(pid).toBeGreaterThan(0);
    await harness.agent.stopRun(session!.id, 'Ada');
    await harness.waitForEvent('run-end', (event) => event.reason === 'stopped');
    // The run ended on the Stop, with the command's result its stopping, not its finishing (`sleep 30`).
    expect(typesInOrder(harness.events, session!.id, ['stop-requested', 'tool-call-end', 'run-end'])).toEqual(['stop-requested', 'tool-call-end', 'run-end']);
    const ended = await harness.waitForEvent('tool-call-end', (event) => event.call.id === 'sh1');
    expect(ended.result).toContain('stopped by Ada while it ran');
    // The background `sleep` of the command's process group is gone too (a zombie waiting for its
    // new parent to reap it counts as gone).
    let alive = true;
    for (let tries = 0; tries < 150 && alive; tries += 1) {
      alive = isRunning(pid);
      if (alive) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(alive).toBe(false);
  });

  it('pauses an idle session, and says so when it is paused already', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'done' });
    const thread = newThread();
    const { session } = await harness.agent.submit(personMessage(thread, 'hello'), { startSession: true });
    await harness.waitForEvent('run-end');
    await (await harness.agent.runner(session!.id)).whenIdle();
    expect(await harness.agent.stopRun(session!.id, 'Ada')).toBe('stopping');
    await (await harness.agent.runner(session!.id)).whenIdle();
    expect((await harness.agent.runner(session!.id)).state).toBe('paused');
    expect(await harness.agent.stopRun(session!.id, 'Ada')).toBe('already-paused');
  });
});
