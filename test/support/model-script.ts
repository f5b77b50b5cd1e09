// Helpers for scripting the fake model server by role.
import type { FakeRequestBody, RecordedRequest } from '../fakes/fake-model-server.js';

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
