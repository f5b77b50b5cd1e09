// The worker context is a list of Chat Completions-style messages. Core treats them as data: the
// model adapter sends them as they are, so history is repeated byte for byte (prompt cache).

/** A function call requested by the model. `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of a model context. Provider extras (e.g. `reasoning_content`) are kept verbatim. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
  [extra: string]: unknown;
}

/** A tool as the model sees it (the Chat Completions `tools` array entry). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The three roles played by one model (spec/memory.md). */
export type AgentRole = 'worker' | 'summarizer' | 'decider';

/** Plain text of a message, for search and display. */
export function messageText(message: ChatMessage): string {
  const parts: string[] = [];
  if (typeof message.content === 'string') parts.push(message.content);
  for (const call of message.tool_calls ?? []) parts.push(`${call.function.name} ${call.function.arguments}`);
  return parts.join('\n');
}
