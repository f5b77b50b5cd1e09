// The model of a chaos run: answers worker requests after a small random delay, sometimes with a
// call to a cheap built-in tool first (so runs have checkpoints and tool results to recover), and
// gives every final answer a unique text so its Slack post can be matched exactly.
import type { FakeReply, FakeReplyHandler, FakeRequestBody, RecordedRequest } from '../fakes/fake-model-server.js';
import type { Random } from './random.js';

/** Tunables of the chaos model. */
export interface ChaosModelOptions {
  /** Reply delay range of worker requests (ms). */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Chance that a worker turn calls a tool instead of answering. */
  toolChance?: number;
  /** Tool rounds in a row at most before the model answers. */
  maxToolRounds?: number;
  /** Chance that a decider asks for a reset (memory forks happen only with a small window). */
  resetChance?: number;
  /**
   * Reply delay range of summarizer forks (ms; default: the worker's). Slow summarizers are live
   * when replicas are SIGKILLed or hand their leases over (R3, R18).
   */
  summarizerDelayMs?: [number, number];
}

/** The text of a chaos answer; unique per model request. */
export function answerText(requestIndex: number): string {
  return `Chaos answer #${requestIndex}: noted, carrying on.`;
}

/** True for summarizer/decider forks: their instruction is a <role-change …> message. */
export function isForkRequest(body: FakeRequestBody): boolean {
  return body.messages.some((message) => message['role'] === 'user' && typeof message['content'] === 'string' && message['content'].trimStart().startsWith('<role-change'));
}

/** Worker requests (not forks) to the chat completions route. */
export function isWorkerRequest(request: RecordedRequest): boolean {
  return request.path === '/v1/chat/completions' && Array.isArray(request.body.messages) && !isForkRequest(request.body);
}

/** The reply handler for the fake model server. */
export function chaosModel(random: Random, options: ChaosModelOptions = {}): FakeReplyHandler {
  const minDelayMs = options.minDelayMs ?? 50;
  const maxDelayMs = options.maxDelayMs ?? 300;
  const toolChance = options.toolChance ?? 0.35;
  const maxToolRounds = options.maxToolRounds ?? 2;
  const resetChance = options.resetChance ?? 0;
  return (body, { index }): FakeReply => {
    const delayMs = random.int(minDelayMs, maxDelayMs);
    // Memory forks only happen with a small context window: the summarizer records nothing, the
    // decider resets as often as asked.
    if (isForkRequest(body)) {
      const decider = body.messages.some((message) => typeof message['content'] === 'string' && message['content'].startsWith('<role-change role="decider"'));
      if (decider) return { content: random.chance(resetChance) ? 'Mostly finished work.\nRESET_CONTEXT' : 'Nothing to record.\nKEEP_CONTEXT', delayMs };
      const [shortest, longest] = options.summarizerDelayMs ?? [minDelayMs, maxDelayMs];
      return { content: 'Nothing to record.\nKEEP_CONTEXT', delayMs: random.int(shortest, longest) };
    }
    if (toolRoundsAtTail(body) < maxToolRounds && random.chance(toolChance)) {
      const id = `call_chaos_${index}`;
      return random.chance(0.5)
        ? { toolCalls: [{ id, name: 'memory_list', arguments: {} }], delayMs }
        : { toolCalls: [{ id, name: 'todo_write', arguments: { content: `- [x] step ${index}\n- [ ] next step` } }], delayMs };
    }
    return { content: answerText(index), delayMs };
  };
}

/** Assistant tool-call turns since the last message from a person. */
function toolRoundsAtTail(body: FakeRequestBody): number {
  let rounds = 0;
  for (let position = body.messages.length - 1; position >= 0; position -= 1) {
    const message = body.messages[position];
    if (!message || message['role'] === 'user') break;
    if (message['role'] === 'assistant' && Array.isArray(message['tool_calls']) && message['tool_calls'].length > 0) rounds += 1;
  }
  return rounds;
}
