// What the fake Anthropic server (fake-anthropic-server.ts) does with a request's prompt: the
// checks the real Messages API makes before it answers, its prompt cache, and a Chat
// Completions-shaped view of the request so test scripts (test/support/model-script.ts) and the
// benchmarks' scenarios work on either fake.
//
// The cache works like Anthropic's: the prompt is a sequence of blocks (tools, system, then each
// message's content blocks); a request writes an entry for the prefix up to each block marked
// `cache_control` (when that prefix has at least `minTokens`), and reads the longest earlier entry
// that ends at one of its marks or up to 20 blocks before one. Nothing else is ever cached, so a
// client that marks the wrong blocks reads nothing. An entry lives 5 minutes from its last write
// or read (the API's default `ephemeral` lifetime).
import { createHash } from 'node:crypto';
import type { FakeRequestBody } from './fake-model-server.js';

/** A content block as sent (only the fields the fake looks at are typed). */
export interface WireBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | WireBlock[];
  source?: { type: string; media_type?: string; data?: string; url?: string };
  cache_control?: { type: string; ttl?: string } | null;
  [field: string]: unknown;
}

/** A Messages API request body. */
export interface AnthropicRequestBody {
  model?: string;
  max_tokens?: number;
  system?: string | WireBlock[];
  messages?: Array<{ role: string; content: string | WireBlock[] }>;
  tools?: Array<Record<string, unknown> & { name: string; description?: string; input_schema?: unknown; cache_control?: unknown }>;
  stream?: boolean;
  [field: string]: unknown;
}

/** What the cache did for one request, in the fake's tokens (UTF-8 characters of each block's JSON / 4). */
export interface CacheOutcome {
  /** Every prompt token: read + written + plain input. */
  promptTokens: number;
  read: number;
  written: number;
  /** Prompt tokens up to each marked block, in prompt order. */
  breakpoints: number[];
  /** Prompt tokens up to the end of each message (tools and system included), by message index. */
  messageEnds: number[];
}

/** Blocks after which the API looks back for an earlier entry (Anthropic: 20). */
const lookbackBlocks = 20;

interface PromptBlock {
  key: string;
  tokens: number;
  marked: boolean;
  /** The index of the message the block is part of (-1: tools and system). */
  message: number;
}

function withoutMark(value: object): object {
  const { cache_control: _mark, ...rest } = value as { cache_control?: unknown };
  return rest;
}

function contentBlocks(content: string | WireBlock[] | undefined): WireBlock[] {
  if (content === undefined) return [];
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function promptBlocks(body: AnthropicRequestBody): PromptBlock[] {
  const block = (key: string, marked: boolean, message = -1): PromptBlock => ({ key, tokens: Math.ceil(key.length / 4), marked, message });
  const blocks: PromptBlock[] = [];
  for (const tool of body.tools ?? []) blocks.push(block(`tool|${JSON.stringify(withoutMark(tool))}`, Boolean(tool.cache_control)));
  for (const part of contentBlocks(body.system)) blocks.push(block(`system|${JSON.stringify(withoutMark(part))}`, Boolean(part.cache_control)));
  for (const [index, message] of (body.messages ?? []).entries()) {
    for (const part of contentBlocks(message.content)) blocks.push(block(`${message.role}|${JSON.stringify(withoutMark(part))}`, Boolean(part.cache_control), index));
  }
  return blocks;
}

/** How long an entry lives after it was last written or read (Anthropic's default: 5 minutes). */
export const defaultCacheTtlMs = 5 * 60_000;

/** A prefix cache shared by the requests of one API key (caches are per organization and model). */
export class FakePromptCache {
  /** Digest of a cached prefix → when it expires (ms). */
  private entries = new Map<string, number>();

  constructor(
    private readonly minTokens: number,
    private readonly options: { ttlMs?: number; now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private live(digest: string | undefined): boolean {
    return digest !== undefined && (this.entries.get(digest) ?? -Infinity) > this.now();
  }

  /**
   * Looks the request up; `commit` writes its entries (the server calls it when the answer starts,
   * as the real cache holds a prompt only once it has been read).
   */
  lookup(scope: string, body: AnthropicRequestBody): { outcome: CacheOutcome; commit: () => void } {
    const blocks = promptBlocks(body);
    const digests: string[] = [];
    const totals: number[] = [];
    let hash = createHash('sha256').update(`${scope}|${body.model ?? ''}`).digest('hex');
    let total = 0;
    const messageEnds: number[] = [];
    for (const block of blocks) {
      hash = createHash('sha256').update(hash).update(block.key).digest('hex');
      total += block.tokens;
      digests.push(hash);
      totals.push(total);
      if (block.message >= 0) messageEnds[block.message] = total;
    }
    const marks = blocks.flatMap((block, index) => (block.marked ? [index] : []));
    let read = 0;
    let readDigest: string | undefined;
    for (const mark of marks) {
      for (let index = mark; index >= Math.max(0, mark - lookbackBlocks); index -= 1) {
        if (this.live(digests[index])) {
          if ((totals[index] ?? 0) > read) [read, readDigest] = [totals[index] ?? 0, digests[index]];
          break;
        }
      }
    }
    const cacheable = marks.filter((mark) => (totals[mark] ?? 0) >= this.minTokens);
    const lastMark = cacheable.at(-1);
    const written = lastMark === undefined ? 0 : Math.max(0, (totals[lastMark] ?? 0) - read);
    return {
      outcome: { promptTokens: total, read, written, breakpoints: marks.map((mark) => totals[mark] ?? 0), messageEnds },
      commit: () => {
        // Reading an entry refreshes its lifetime, as writing does.
        const expires = this.now() + (this.options.ttlMs ?? defaultCacheTtlMs);
        for (const digest of [readDigest, ...cacheable.map((mark) => digests[mark])]) if (digest !== undefined) this.entries.set(digest, expires);
      },
    };
  }

  clear(): void {
    this.entries = new Map();
  }
}

/** Tokens of a prompt as the fake counts them (for the prompt-too-long check without caching). */
export function promptTokensOf(body: AnthropicRequestBody): number {
  return promptBlocks(body).reduce((sum, block) => sum + block.tokens, 0);
}

/**
 * The 400 the real API would answer for this body, or null. Checks what a client can get wrong:
 * required fields, empty content, too many cache marks, tool results that do not answer the
 * previous assistant turn's tool calls (consecutive messages of one role count as one turn).
 */
export function invalidRequest(body: AnthropicRequestBody): string | null {
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens ?? 0) < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  const marks = promptBlocks(body).filter((block) => block.marked).length;
  if (marks > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marks}.`;
  const turns: Array<{ role: string; blocks: WireBlock[]; first: number }> = [];
  for (const [index, message] of body.messages.entries()) {
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${index}.role: Input should be 'user' or 'assistant'`;
    const blocks = contentBlocks(message.content);
    if (blocks.length === 0) return `messages.${index}: all messages must have non-empty content except for the optional final assistant message`;
    for (const block of blocks) {
      if (block.type === 'text' && (block.text ?? '').trim() === '') return `messages.${index}: text content blocks must contain non-whitespace text`;
    }
    const last = turns.at(-1);
    if (last?.role === message.role) last.blocks.push(...blocks);
    else turns.push({ role: message.role, blocks: [...blocks], first: index });
  }
  for (const [position, turn] of turns.entries()) {
    const calls = turn.role === 'assistant' ? turn.blocks.filter((block) => block.type === 'tool_use').map((block) => block.id ?? '') : [];
    const next = turns[position + 1];
    const answered = new Set((next?.blocks ?? []).filter((block) => block.type === 'tool_result').map((block) => block.tool_use_id ?? ''));
    const missing = calls.filter((id) => !answered.has(id));
    if (missing.length > 0 && next) {
      return `messages.${next.first}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    if (turn.role !== 'user') continue;
    const previous = turns[position - 1];
    const asked = new Set((previous?.blocks ?? []).filter((block) => block.type === 'tool_use').map((block) => block.id ?? ''));
    const results = turn.blocks.filter((block) => block.type === 'tool_result');
    const stray = results.find((block) => !asked.has(block.tool_use_id ?? ''));
    if (stray) return `messages.${turn.first}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${stray.tool_use_id ?? ''}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    const firstOther = turn.blocks.findIndex((block) => block.type !== 'tool_result');
    if (firstOther >= 0 && turn.blocks.slice(firstOther).some((block) => block.type === 'tool_result')) {
      return `messages.${turn.first}: tool_result blocks must come before any other content in the user message`;
    }
  }
  return null;
}

/**
 * The request as Chat Completions messages (system first, tool results as `tool` messages, a lone
 * text block as string content), so scripts written for the OpenAI fake read it unchanged.
 */
export function chatView(body: AnthropicRequestBody): FakeRequestBody {
  const messages: Array<Record<string, unknown>> = [];
  const system = contentBlocks(body.system).map((block) => block.text ?? '').join('\n');
  if (body.system !== undefined) messages.push({ role: 'system', content: system });
  for (const message of body.messages ?? []) {
    const blocks = contentBlocks(message.content);
    if (message.role === 'assistant') {
      const text = blocks.filter((block) => block.type === 'text').map((block) => block.text ?? '').join('');
      const calls = blocks.filter((block) => block.type === 'tool_use').map((block) => ({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } }));
      messages.push({ role: 'assistant', content: calls.length > 0 && text === '' ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    const rest: WireBlock[] = [];
    for (const block of blocks) {
      if (block.type === 'tool_result') messages.push({ role: 'tool', tool_call_id: block.tool_use_id, content: textOfBlocks(contentBlocks(block.content)) });
      else rest.push(block);
    }
    if (rest.length === 0) continue;
    const only = rest[0];
    if (rest.length === 1 && only?.type === 'text') messages.push({ role: 'user', content: only.text ?? '' });
    else messages.push({ role: 'user', content: rest.map(chatPart) });
  }
  const tools = (body.tools ?? []).map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description ?? '', parameters: tool.input_schema } }));
  return { model: body.model ?? '', messages, ...(tools.length > 0 ? { tools } : {}), stream: body.stream === true, prompt_cache_key: '' };
}

function textOfBlocks(blocks: WireBlock[]): string {
  return blocks.map((block) => (block.type === 'text' ? block.text ?? '' : '')).join('');
}

function chatPart(block: WireBlock): Record<string, unknown> {
  if (block.type === 'image') {
    const source = block.source;
    const url = source?.type === 'base64' ? `data:${source.media_type ?? ''};base64,${source.data ?? ''}` : source?.url ?? '';
    return { type: 'image_url', image_url: { url } };
  }
  return { type: 'text', text: block.text ?? '' };
}
