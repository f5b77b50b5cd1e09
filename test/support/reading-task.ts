// A task that reads a report chunk by chunk: the memory tests' way to grow a context by a known
// amount per step (R2, R19, R20), with each role scripted apart.
import { z } from 'zod';
import type { AgentEvent } from '../../src/core/events.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import type { FakeModelServer, FakeReply, FakeRequestBody } from '../fakes/fake-model-server.js';
import type { TestDatabase } from './database.js';
import type { AgentHarness } from './agent-harness.js';
import { roleOf, type ScriptRole } from './model-script.js';

/** `read_chunk` returns `chars` characters of text naming the chunk (about chars / 4 tokens). */
export function readChunk(chars: number): AnyTool {
  return defineTool({
    name: 'read_chunk', description: 'Reads one chunk of the report.', repeatable: true,
    input: z.object({ n: z.number().int() }),
    execute: async ({ n }) => `chunk ${n}: ${'the quarterly figures hold steady '.repeat(Math.ceil(chars / 34))}`.slice(0, chars),
  }) as AnyTool;
}

/** One role's replies, by the request and its index among that role's requests. */
export type RoleReplies = (body: FakeRequestBody, index: number) => FakeReply | Promise<FakeReply>;

/** Routes requests by role; replies carry no usage unless given, so the fake reports the prompt it counted. */
export function scriptByRole(model: FakeModelServer, scripts: Partial<Record<ScriptRole, RoleReplies>>): void {
  const counters: Record<ScriptRole, number> = { worker: 0, summarizer: 0, decider: 0 };
  const defaults: Record<ScriptRole, FakeReply> = {
    worker: { content: 'ok' },
    summarizer: { content: 'noted' },
    decider: { content: 'All of it matters for the task.\nKEEP_CONTEXT' },
  };
  model.respond(async (body) => {
    const role = roleOf(body);
    const index = counters[role]++;
    return (await scripts[role]?.(body, index)) ?? defaults[role];
  });
}

/** A worker that reads chunks 0..reads-1, one per call, then answers `answer`. */
export function reader(reads: number, answer = 'all chunks read'): RoleReplies {
  return (_body, index) => (index < reads ? { toolCalls: [{ id: `read${index}`, name: 'read_chunk', arguments: { n: index } }] } : { content: answer });
}

/** The stored messages of each segment of a session, oldest segment first. */
export function segmentsOf(database: TestDatabase, sessionId: string) {
  return database.prisma.segment.findMany({ where: { sessionId }, orderBy: { ordinal: 'asc' }, include: { messages: { orderBy: { seq: 'asc' } } } });
}

/** The context resets a harness has seen. */
export function resetsOf(h: AgentHarness): Array<Extract<AgentEvent, { type: 'context-reset' }>> {
  return h.events.filter((event): event is Extract<AgentEvent, { type: 'context-reset' }> => event.type === 'context-reset');
}
