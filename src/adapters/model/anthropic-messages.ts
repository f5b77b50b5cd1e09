// Our context (Chat Completions-shaped messages, src/core/messages.ts) as an Anthropic Messages
// API prompt, with its prompt-cache breakpoints. Anthropic caches a prompt only up to a block
// marked `cache_control`, and a later request reads an entry only when it is identical up to
// there, so the marks decide what forks and later worker calls read from the cache.
//
// The marks (at most 4, the API's limit) go where the same rule puts them whatever user messages
// are appended, so a fork (the worker's context plus ONE user message, R1) is the worker's
// request at the wire, byte for byte, plus that message:
//   1. the last system block (tools and system prompt: the system prompt holds no time and no id,
//      so it is the same for every segment and session of a platform, and the first request after
//      a reset, or of a new session, reads it from the cache);
//   2. the message before the last assistant message: where the previous call's prompt ended,
//      so this call reads what that call wrote; before the first answer, the first message (the
//      memory documents) instead;
//   3. the last message that is not a user message (a tool result or the assistant's answer):
//      the worker's context at a checkpoint ends there, and so does every fork's prefix;
//   4. a summarizer's last message (`markLast`): its instruction, which its own next call then
//      reads. A decider's is not marked: it answers in one call (R5), so nothing would read the
//      entry, and a cache write costs 1.25× plain input on Claude.
// The worker's user messages after mark 3 (the memory marker, steers) are not marked, since a fork
// appended after them could not keep the mark: they are billed as plain input once, and cached by
// the next call's mark 2.
import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { ChatMessage, ContentPart, ToolDefinition } from '../../core/messages.js';

/** The prompt parts of a Messages API request. */
export interface AnthropicPrompt {
  /** Leading system messages as text blocks; absent when there are none. */
  system?: TextBlockParam[];
  messages: MessageParam[];
  tools: Tool[];
}

/** One context message as content blocks, before consecutive tool results are joined. */
interface Unit {
  kind: 'user' | 'assistant' | 'tool';
  blocks: ContentBlockParam[];
}

const breakpoint = { type: 'ephemeral' } as const;

/**
 * Converts a request's messages and tools; deterministic, so history repeats byte for byte.
 * `markLast`: the last message is read again by the same run's next call (a summarizer's, mark 4).
 */
export function toAnthropicPrompt(messages: readonly ChatMessage[], tools: readonly ToolDefinition[], options: { markLast?: boolean } = {}): AnthropicPrompt {
  let start = 0;
  const system: TextBlockParam[] = [];
  for (; start < messages.length && messages[start]?.role === 'system'; start += 1) {
    system.push(...textBlocks(messages[start]?.content ?? null));
  }
  // A message with nothing to send (an empty answer) is left out: the API refuses empty content.
  const units = messages.slice(start).map(unitOf).filter((unit) => unit.blocks.length > 0);
  markBreakpoints(system, units, options.markLast ?? false);
  return {
    ...(system.length > 0 ? { system } : {}),
    messages: joinToolResults(units),
    tools: tools.map((tool) => ({ name: tool.function.name, description: tool.function.description, input_schema: tool.function.parameters as Tool['input_schema'] })),
  };
}

function markBreakpoints(system: TextBlockParam[], units: Unit[], markLast: boolean): void {
  const lastSystem = system.at(-1);
  if (lastSystem) lastSystem.cache_control = breakpoint;
  const lastAssistant = units.findLastIndex((unit) => unit.kind === 'assistant');
  const lastNonUser = units.findLastIndex((unit) => unit.kind !== 'user');
  const marks = [lastAssistant >= 0 ? lastAssistant - 1 : 0, lastNonUser, markLast ? units.length - 1 : -1];
  for (const index of new Set(marks)) {
    const block = units[index]?.blocks.at(-1);
    if (block) (block as { cache_control?: unknown }).cache_control = breakpoint;
  }
}

function unitOf(message: ChatMessage): Unit {
  switch (message.role) {
    case 'assistant': {
      const text = typeof message.content === 'string' ? message.content : textOf(message.content);
      const blocks: ContentBlockParam[] = text.trim() === '' ? [] : [{ type: 'text', text }];
      for (const call of message.tool_calls ?? []) {
        blocks.push({ type: 'tool_use', id: toolUseId(call.id), name: call.function.name, input: toolInput(call.function.arguments) });
      }
      return { kind: 'assistant', blocks };
    }
    case 'tool': {
      const block: ToolResultBlockParam = { type: 'tool_result', tool_use_id: toolUseId(message.tool_call_id ?? '') };
      // An empty result is sent without content: the API refuses empty text.
      const content = typeof message.content === 'string' ? message.content : partBlocks(message.content ?? []);
      if (typeof content === 'string' ? content.trim() !== '' : content.length > 0) block.content = content;
      return { kind: 'tool', blocks: [block] };
    }
    // A system message after the first user message (core writes none) is passed on as user text.
    default:
      return { kind: 'user', blocks: typeof message.content === 'string' ? textBlocks(message.content) : partBlocks(message.content ?? []) };
  }
}

/** Consecutive tool results go back in one user message, as the API documents for parallel calls. */
function joinToolResults(units: Unit[]): MessageParam[] {
  const messages: MessageParam[] = [];
  let previous: Unit | undefined;
  for (const unit of units) {
    const last = messages.at(-1);
    if (unit.kind === 'tool' && previous?.kind === 'tool' && last) (last.content as ContentBlockParam[]).push(...unit.blocks);
    else messages.push({ role: unit.kind === 'assistant' ? 'assistant' : 'user', content: [...unit.blocks] });
    previous = unit;
  }
  return messages;
}

function textBlocks(content: ChatMessage['content']): TextBlockParam[] {
  const text = typeof content === 'string' ? content : textOf(content);
  return text.trim() === '' ? [] : [{ type: 'text', text }];
}

function textOf(parts: ContentPart[] | null): string {
  return (parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function partBlocks(parts: readonly ContentPart[]): Array<TextBlockParam | ImageBlockParam> {
  const blocks: Array<TextBlockParam | ImageBlockParam> = [];
  for (const part of parts) {
    if (part.type === 'text') {
      if (part.text.trim() !== '') blocks.push({ type: 'text', text: part.text });
      continue;
    }
    blocks.push(imageBlock(part.image_url.url));
  }
  return blocks;
}

// Images are stored as data URLs (src/core/messages.ts); anything else is passed as a URL.
const dataUrl = /^data:([^;,]+);base64,/;

function imageBlock(url: string): ImageBlockParam {
  const match = dataUrl.exec(url);
  if (!match) return { type: 'image', source: { type: 'url', url } };
  const mediaType = match[1] as 'image/png';
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data: url.slice(match[0].length) } };
}

/** The API accepts ids of letters, digits, `_` and `-`; ids from other providers are mapped onto that. */
function toolUseId(id: string): string {
  return id === '' ? 'tool_call' : id.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/**
 * The call's arguments as the object the API wants. Text that is not a JSON object (a cut-off
 * answer) is kept under `invalid_json`, so the model sees what it sent next to the tool's error.
 */
function toolInput(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // kept below
  }
  return { invalid_json: text };
}
