// R1: a fork is the worker's request byte for byte plus ONE appended user message. The prefix
// (model, tools, init messages, history, cache key) is shared, so the provider's cache serves it.
import type { AgentDeps } from '../agent-context.js';
import type { ChatMessage } from '../messages.js';
import type { ModelRequest } from '../model-client.js';
import { buildRequest } from '../loop/model-call.js';

/** The request of a fork: `snapshot` is the worker's context at fork time. */
export function forkRequest(deps: Pick<AgentDeps, 'settings' | 'tools'>, sessionId: string, snapshot: readonly ChatMessage[], instruction: string): ModelRequest {
  return buildRequest(deps, sessionId, [...snapshot, { role: 'user', content: instruction }]);
}
