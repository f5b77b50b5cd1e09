// The model port. Implemented by src/adapters/model (OpenAI-compatible Chat Completions, Anthropic Messages).
import type { AgentRole, ChatMessage, ToolDefinition } from './messages.js';

/** One request to the model. Forks reuse the worker's request and append one message (R1). */
export interface ModelRequest {
  model: string;
  messages: readonly ChatMessage[];
  tools: readonly ToolDefinition[];
  /**
   * The session id, shared by the worker and its forks: sent as `prompt_cache_key` to
   * OpenAI-compatible endpoints (Anthropic caches by exact prefix and takes no key).
   */
  cacheKey: string;
  /**
   * The answer's token cap, when smaller than the client's own (deciders: a decision is a line).
   * Not part of the prompt, so a fork that sets it still shares the worker's cached prefix (R1).
   */
  maxOutputTokens?: number;
  /** Ask for the least reasoning the model allows, where the provider supports choosing (deciders). */
  minimalReasoning?: boolean;
}

/** Token usage reported by the provider for one call. */
export interface ModelUsage {
  promptTokens: number;
  /** Read from the prompt cache (`cached_tokens`, Anthropic's `cache_read_input_tokens`); 0 when the provider does not say. */
  cachedTokens: number;
  completionTokens: number;
  /**
   * Prompt tokens written to the prompt cache, for providers that bill writes (Anthropic's
   * `cache_creation_input_tokens`, part of `promptTokens`); absent when the provider does not say.
   */
  cacheWriteTokens?: number;
}

export interface ModelResponse {
  /** The assistant message, with provider extras kept so it can be sent back unchanged. */
  message: ChatMessage;
  /** Null when the provider reported no usage (then core estimates). */
  usage: ModelUsage | null;
  /** Wall time of the call including retries, in milliseconds. */
  latencyMs: number;
}

export interface ModelCallOptions {
  role: AgentRole;
  signal?: AbortSignal;
  /** Streamed assistant text as it arrives. */
  onTextDelta?: (delta: string) => void;
  /** The first chunk of the answer arrived: the provider has read (and cached) the whole prompt. */
  onResponseStart?: () => void;
}

/** Calls the model; retries transient failures itself and throws ModelError when it gives up. */
export interface ModelClient {
  complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse>;
}
