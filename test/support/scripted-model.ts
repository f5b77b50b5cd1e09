// An in-process model for core's unit tests: implements core's ModelClient port (src/core/model-client.ts)
// with scripted replies, so runner and memory logic is tested without HTTP or Postgres. The HTTP
// fakes (test/fakes/fake-model-server.ts, fake-anthropic-server.ts) stay for the provider clients.
//
//   const model = new ScriptedModel({ decider: [{ toolCalls: [{ name: 'count' }] }, { content: 'KEEP_CONTEXT' }] });
//   … run the code under test with `model` as its AgentDeps.model …
//   model.assertAllUsed();
import { CancelledError, ModelError } from '../../src/core/errors.js';
import type { AgentRole, ChatMessage } from '../../src/core/messages.js';
import type { ModelCallOptions, ModelClient, ModelRequest, ModelResponse, ModelUsage } from '../../src/core/model-client.js';

/** One scripted answer of the model. */
export interface ScriptedReply {
  /** The answer's text (streamed as one delta); null or absent with tool calls. */
  content?: string;
  /** Tool calls; `id` defaults to `call-<n>`, `arguments` (an object, sent as JSON) to `{}`. */
  toolCalls?: Array<{ id?: string; name: string; arguments?: unknown }>;
  /** The provider's usage report; absent: a small fixed one, null: "the provider said nothing". */
  usage?: ModelUsage | null;
  /** The call never answers: it ends only when its signal is aborted (with CancelledError). */
  hang?: true;
  /** The call fails with this error instead (a ModelError is what the real clients throw). */
  error?: Error;
}

/** One call the code under test made. */
export interface ScriptedCall {
  request: ModelRequest;
  role: AgentRole;
  /** Which reply answered it (its index in the role's script, or in the one list). */
  replyIndex: number;
}

/** A list answered in order, or one list per role (forks and the worker share a client). */
export type Script = ScriptedReply[] | Partial<Record<AgentRole, ScriptedReply[]>>;

const defaultUsage: ModelUsage = { promptTokens: 100, cachedTokens: 0, completionTokens: 5 };

export class ScriptedModel implements ModelClient {
  /** Every call, in order (those that failed or were aborted too). */
  readonly calls: ScriptedCall[] = [];
  private readonly used = new Map<string, number>();

  constructor(private readonly script: Script) {}

  /** The calls of one role, in order. */
  callsOf(role: AgentRole): ScriptedCall[] {
    return this.calls.filter((call) => call.role === role);
  }

  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    const key = Array.isArray(this.script) ? 'all' : options.role;
    const list = Array.isArray(this.script) ? this.script : (this.script[options.role] ?? []);
    const replyIndex = this.used.get(key) ?? 0;
    const reply = list[replyIndex];
    // Recorded before anything can fail, so a test sees the call that went wrong.
    this.calls.push({ request: { ...request, messages: [...request.messages] }, role: options.role, replyIndex });
    if (!reply) {
      throw new ModelError(`scripted model: no reply left for call ${replyIndex + 1} of the ${options.role}${key === 'all' ? ' (one list for all roles)' : ''}`, false);
    }
    this.used.set(key, replyIndex + 1);
    if (options.signal?.aborted) throw cancelled(options.signal);
    if (reply.hang) return hangUntilAborted(options.signal);
    if (reply.error) throw reply.error;
    options.onResponseStart?.();
    if (reply.content) options.onTextDelta?.(reply.content);
    const message: ChatMessage = { role: 'assistant', content: reply.content ?? null };
    if (reply.toolCalls?.length) {
      message.tool_calls = reply.toolCalls.map((call, index) => ({
        id: call.id ?? `call-${this.calls.length}-${index + 1}`,
        type: 'function',
        function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
      }));
    }
    return { message, usage: reply.usage === undefined ? defaultUsage : reply.usage, latencyMs: 0 };
  }

  /** Throws unless every scripted reply was used (a test that stops early says which were not). */
  assertAllUsed(): void {
    const lists: Array<[string, ScriptedReply[]]> = Array.isArray(this.script) ? [['all', this.script]] : Object.entries(this.script);
    const left = lists.flatMap(([key, list]) => {
      const used = this.used.get(key) ?? 0;
      return used < list.length ? [`${list.length - used} of ${list.length} ${key === 'all' ? '' : `${key} `}replies`] : [];
    });
    if (left.length > 0) throw new Error(`scripted model: unused ${left.join(', ')}`);
  }
}

function cancelled(signal: AbortSignal): CancelledError {
  const reason: unknown = signal.reason;
  return new CancelledError(typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : String(reason));
}

function hangUntilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (!signal) return reject(new Error('scripted model: a hanging reply needs a signal to end it'));
    signal.addEventListener('abort', () => reject(cancelled(signal)), { once: true });
  });
}
