// The worker context is a list of Chat Completions-style messages. Core treats them as data: the
// model adapter sends them as they are, so history is repeated byte for byte (prompt cache).

/** A function call requested by the model. `arguments` is the raw JSON text the model produced. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A part of a user message's content (Chat Completions): text, or an image given as a data URL
 * (the bytes are part of the stored message, so the prompt repeats byte for byte).
 */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** One message of a model context. Provider extras (e.g. `reasoning_content`) are kept verbatim. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** Text; for user messages with images, parts. */
  content: string | ContentPart[] | null;
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

/** The three roles played by one model (docs/memory-rules.md). */
export type AgentRole = 'worker' | 'summarizer' | 'decider';

/** The text of a message's content: the string, or its text parts joined (images left out). */
export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => (part.type === 'text' ? part.text : '')).filter((text) => text !== '').join('\n');
}

/** Plain text of a message, for search and display. */
export function messageText(message: ChatMessage): string {
  const parts: string[] = [];
  const text = contentText(message.content);
  if (text !== '') parts.push(text);
  for (const call of message.tool_calls ?? []) parts.push(`${call.function.name} ${call.function.arguments}`);
  return parts.join('\n');
}
