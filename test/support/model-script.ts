// Helpers for scripting the fake model server by role.
import { z } from 'zod';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import type { FakeModelServer, FakeReply, FakeRequestBody, RecordedRequest } from '../fakes/fake-model-server.js';

export type ScriptRole = 'worker' | 'summarizer' | 'decider';

/** Which role sent a request: forks end with a role-change instruction. */
export function roleOf(body: FakeRequestBody): ScriptRole {
  const last = body.messages.at(-1);
  const content = typeof last?.['content'] === 'string' ? last['content'] : '';
  if (last?.['role'] === 'user' && content.startsWith('<role-change role="summarizer"')) return 'summarizer';
  if (last?.['role'] === 'user' && content.startsWith('<role-change role="decider"')) return 'decider';
  // Forks keep going after their instruction (tool results): look for the instruction anywhere.
  for (const message of body.messages) {
    const text = typeof message['content'] === 'string' ? message['content'] : '';
    if (message['role'] === 'user' && text.startsWith('<role-change role="summarizer"')) return 'summarizer';
    if (message['role'] === 'user' && text.startsWith('<role-change role="decider"')) return 'decider';
  }
  return 'worker';
}

/** Requests of one role, in arrival order. */
export function requestsOf(requests: readonly RecordedRequest[], role: ScriptRole): RecordedRequest[] {
  return requests.filter((request) => roleOf(request.body) === role);
}

/** The messages of a request after the init messages (system + memory documents). */
export function conversation(body: FakeRequestBody): Array<Record<string, unknown>> {
  return body.messages.slice(2);
}

/** A compact picture of a message list: "user:Ada wrote…", "assistant→[a,b]", "tool(a)". */
export function shape(messages: ReadonlyArray<Record<string, unknown>>): string[] {
  return messages.map((message) => {
    const role = String(message['role']);
    const calls = message['tool_calls'] as Array<{ id: string }> | undefined;
    if (role === 'assistant' && calls?.length) return `assistant→[${calls.map((call) => call.id).join(',')}]`;
    if (role === 'tool') return `tool(${String(message['tool_call_id'])})`;
    const content = typeof message['content'] === 'string' ? message['content'] : '';
    if (content.startsWith('<memory-checkpoint')) return 'marker';
    return `${role}:${content.split('\n').at(-1)?.replace(/^> /, '') ?? ''}`;
  });
}


export type RoleScript = FakeReply[] | ((body: FakeRequestBody, index: number) => FakeReply | Promise<FakeReply>);

const roleDefaults: Record<ScriptRole, FakeReply> = {
  // Explicit usage: the fake's estimate of our long init messages would cross steps by itself.
  worker: { content: 'ok', usage: { promptTokens: 100, cachedTokens: 0, completionTokens: 5 } },
  summarizer: { content: 'no change', usage: { promptTokens: 100, cachedTokens: 90, completionTokens: 5 } },
  decider: { content: 'Mostly still relevant.\nKEEP_CONTEXT', usage: { promptTokens: 100, cachedTokens: 90, completionTokens: 5 } },
};

/** Routes each request to its role's script (a list consumed in order, or a function). */
export function scriptRoles(model: FakeModelServer, scripts: Partial<Record<ScriptRole, RoleScript>>): void {
  const counters: Record<ScriptRole, number> = { worker: 0, summarizer: 0, decider: 0 };
  model.respond(async (body) => {
    const role = roleOf(body);
    const index = counters[role]++;
    const script = scripts[role];
    const reply = !script ? undefined : Array.isArray(script) ? script[index] : await script(body, index);
    return { ...roleDefaults[role], ...(reply ?? {}), usage: reply?.usage ?? roleDefaults[role].usage ?? null };
  });
}

/** A worker reply with the given prompt tokens (drives the R2 trigger). */
export function at(promptTokens: number, reply: FakeReply = {}): FakeReply {
  return { content: 'ok', ...reply, usage: { promptTokens, cachedTokens: 0, completionTokens: 5 } };
}

/** A promise the test resolves later. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A tool `slow_step` that runs until the test opens its gate; `started` tells whether it began. */
export function slowTool(result = 'slow done'): { tool: AnyTool; started: () => boolean; open: () => void } {
  const toolGate = gate();
  let started = false;
  const tool = defineTool({
    name: 'slow_step', description: 'Slow.', input: z.object({}),
    execute: async () => {
      started = true;
      await toolGate.promise;
      return result;
    },
  }) as AnyTool;
  return { tool, started: () => started, open: toolGate.open };
}
