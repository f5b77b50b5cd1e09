// R6, R20: what a reset carries into the new segment, and how it is made to fit its budget.
// Everything in a message counts, images included; a tool call and its results are carried or
// dropped together, never apart (a provider refuses a result whose call is not right before it).
import { estimateTokens } from '../loop/context-window.js';
import { savedPaths } from '../loop/image-budget.js';
import { capHeadTail } from '../output-cap.js';
import type { ChatMessage, ContentPart } from '../messages.js';
import type { StoredMessage } from '../store.js';

/**
 * Messages after the latest marker whose summarizer run succeeded; all conversational messages
 * when there is none. Markers themselves are not carried (they belong to the old segment). The
 * store never marks a carried copy as owed delivery: its original keeps that mark (R17). Never
 * starts with a tool result, and never holds a result without its call (see pairedCalls).
 */
export function carryOver(entries: readonly StoredMessage[], succeededRuns: ReadonlySet<string>): StoredMessage[] {
  const all = entries.filter((entry) => !entry.isInit && !entry.isMarker);
  // The boundary, as an index into `all`: the conversational messages before the latest marker.
  let from = 0;
  let seen = 0;
  for (const entry of entries) {
    if (entry.isMarker && entry.memoryRunId && succeededRuns.has(entry.memoryRunId)) from = seen;
    else if (!entry.isInit && !entry.isMarker) seen += 1;
  }
  if (from === all.length) {
    // Nothing after the boundary: keep the last exchange (from the last person's message on), so
    // the new context never starts without the conversation it is in (§9.1 defect 10).
    const lastPerson = all.findLastIndex((entry) => entry.message.role === 'user');
    if (lastPerson < 0) return [];
    from = lastPerson;
  }
  // Markers are placed at checkpoints, after all results of a batch, so this is defensive: a
  // boundary inside a batch moves back to the batch's call rather than carry its results alone.
  while (from < all.length && all[from]!.message.role === 'tool') {
    const callId = all[from]!.message.tool_call_id;
    const call = all.findLastIndex((entry, index) => index < from && entry.message.tool_calls?.some((candidate) => candidate.id === callId) === true);
    if (call < 0) break;
    from = call;
  }
  return pairedCalls(all.slice(from));
}

/**
 * R6: the carried list with every tool result right after its call. A result whose call is not
 * the message it follows is dropped (a segment an older trim left broken heals at its next reset);
 * an assistant message whose calls lost results is dropped with them, unless it is the last one
 * (the calls of a crashed turn not run yet: the worker runs them first, R9).
 */
export function pairedCalls(carried: readonly StoredMessage[]): StoredMessage[] {
  const kept: StoredMessage[] = [];
  const groups = callGroups(carried);
  for (const [position, [start, end]] of groups.entries()) {
    const head = carried[start]!;
    if (head.message.role === 'tool') continue;
    if (end === start + 1 && !head.message.tool_calls?.length) {
      kept.push(head);
      continue;
    }
    const calls = new Set((head.message.role === 'assistant' ? head.message.tool_calls ?? [] : []).map((call) => call.id));
    const results = carried.slice(start + 1, end).filter((entry) => calls.has(entry.message.tool_call_id ?? ''));
    const answered = new Set(results.map((entry) => entry.message.tool_call_id));
    if (answered.size < calls.size && position < groups.length - 1) continue;
    kept.push(head, ...results);
  }
  return kept;
}

/**
 * The groups of a carried list as [start, end) ranges: each message with the tool results that
 * follow it. A tool result at the very start forms a group of its own (an orphan).
 */
function callGroups(entries: readonly StoredMessage[]): Array<[number, number]> {
  const groups: Array<[number, number]> = [];
  for (let index = 0; index < entries.length; index += 1) {
    const last = groups.at(-1);
    if (last && entries[index]!.message.role === 'tool') last[1] = index + 1;
    else groups.push([index, index + 1]);
  }
  return groups;
}

/** The stub a tool result older than the last batch leaves in the carry-over (R20). */
export function carriedToolStub(tool: string, chars: number): string {
  return `[${tool} result (${chars} characters) not carried over to keep the new context small; it is in the archive of the earlier context: memory_search finds it, or call ${tool} again]`;
}

/** The text an image leaves in the carry-over when it does not fit (R20), naming its file when saved. */
export function carriedImageText(savedAs: string | undefined): string {
  const where = savedAs ? ` It is saved in the workspace as ${savedAs}.` : ' It is not in the workspace: the tool or the person that gave it can give it again.';
  return `(An earlier image was not carried over, to keep the new context small.${where})`;
}

/**
 * R20: `carried` within `budgetTokens`: tool results older than the last tool batch become stubs,
 * oldest first, then images become a text note, oldest first, until it fits. `fits` is false when
 * that was not enough.
 */
export function fitCarryOver(carried: readonly StoredMessage[], budgetTokens: number): { entries: StoredMessage[]; fits: boolean } {
  const entries = [...carried];
  const lastBatchCall = entries.findLastIndex((entry) => entry.message.role === 'assistant' && (entry.message.tool_calls?.length ?? 0) > 0);
  let tokens = estimateTokens(entries.map((entry) => entry.message));
  for (let index = 0; index < lastBatchCall && tokens > budgetTokens; index += 1) tokens -= stubToolResult(entries, index);
  tokens = replaceImages(entries, tokens, budgetTokens);
  return { entries, fits: tokens <= budgetTokens };
}

/**
 * The last resort when neither stubs nor a summarizer made the carry-over fit (its summarizer
 * failed, or the window is tiny): every tool result becomes a stub, every image a note, then the
 * oldest groups (a message with the results of its calls, never split) stay in the archive only,
 * then the texts of the last group are cut, and if even that does not fit, it stays in the archive
 * too. Bounded: the new segment never starts above its budget, so resets cannot loop.
 */
export function trimCarryOver(carried: readonly StoredMessage[], budgetTokens: number): StoredMessage[] {
  const entries = pairedCalls(carried);
  let tokens = estimateTokens(entries.map((entry) => entry.message));
  for (let index = 0; index < entries.length && tokens > budgetTokens; index += 1) tokens -= stubToolResult(entries, index);
  tokens = replaceImages(entries, tokens, budgetTokens);
  if (tokens <= budgetTokens) return entries;
  // What is kept must fit beside the note that says what was not. Dropped groups' tokens are
  // subtracted (linear in the carry-over however many small messages it has), and the rest is
  // measured whole once it seems to fit, as a list's estimate is not exactly the sum of its parts.
  const limit = budgetTokens - estimateTokens([droppedNote(entries.length)]) - 1;
  const groups = callGroups(entries);
  let dropped = 0;
  for (let group = 0; group < groups.length - 1 && tokens > limit; group += 1) {
    const end = groups[group]![1];
    tokens -= estimateTokens(entries.slice(dropped, end).map((entry) => entry.message));
    dropped = end;
    if (tokens <= limit) tokens = estimateTokens(entries.slice(dropped).map((entry) => entry.message));
  }
  let kept = entries.slice(dropped);
  if (tokens > limit) kept = cutGroup(kept, limit);
  if (kept.length === 0) dropped = entries.length;
  if (dropped === 0) return kept;
  // Placed where the dropped messages were; its seq is renumbered with the rest.
  const seq = kept[0]?.seq ?? entries.at(-1)?.seq ?? 0;
  return [{ seq, message: droppedNote(dropped), isInit: false, isMarker: false, memoryRunId: null }, ...kept];
}

/**
 * The last group's texts cut (head and tail) until it fits `limit`, halving their share a few
 * times; empty when it still does not fit (say, a call whose arguments alone are too large).
 */
function cutGroup(group: StoredMessage[], limit: number): StoredMessage[] {
  const texts = group.reduce((count, entry) => count + textFields(entry.message), 0);
  for (let divisor = 1; divisor <= 8 && limit > 0; divisor *= 2) {
    // About 4 characters a token (capHeadTail weighs a non-ASCII character as a token).
    const share = Math.max(200, Math.floor((limit * 4) / (Math.max(1, texts) * divisor)));
    const cut = group.map((entry) => ({ ...entry, message: cutTexts(entry.message, share) }));
    if (estimateTokens(cut.map((entry) => entry.message)) <= limit) return cut;
  }
  return [];
}

function textFields(message: ChatMessage): number {
  const content = typeof message.content === 'string' ? 1 : (message.content ?? []).filter((part) => part.type === 'text').length;
  return content + (typeof message.reasoning_content === 'string' ? 1 : 0);
}

/** The message with its text content (and reasoning) cut to `limit` characters each. */
function cutTexts(message: ChatMessage, limit: number): ChatMessage {
  const content = typeof message.content === 'string'
    ? capHeadTail(message.content, limit, 'message')
    : message.content?.map((part): ContentPart => (part.type === 'text' ? { type: 'text', text: capHeadTail(part.text, limit, 'message') } : part)) ?? null;
  const reasoning = typeof message.reasoning_content === 'string' ? { reasoning_content: capHeadTail(message.reasoning_content, limit, 'reasoning') } : {};
  return { ...message, content, ...reasoning };
}

function droppedNote(dropped: number): ChatMessage {
  return { role: 'user', content: `[${dropped} earlier messages of this conversation were not carried over (the context was full); memory_search finds them in the archive]` };
}

/** Replaces the tool result at `index` by its stub; returns the tokens saved. */
function stubToolResult(entries: StoredMessage[], index: number): number {
  const entry = entries[index];
  if (!entry || entry.message.role !== 'tool') return 0;
  const callId = entry.message.tool_call_id;
  let call: StoredMessage | undefined;
  // Back from the result to its call (a few messages up: no copy of the list per result).
  for (let earlier = index - 1; earlier >= 0 && !call; earlier -= 1) {
    const message = entries[earlier]?.message;
    if (message?.role === 'assistant' && message.tool_calls?.some((candidate) => candidate.id === callId)) call = entries[earlier];
  }
  const tool = call?.message.tool_calls?.find((candidate) => candidate.id === callId)?.function.name ?? 'tool';
  const content = typeof entry.message.content === 'string' ? entry.message.content : JSON.stringify(entry.message.content);
  const stub = carriedToolStub(tool, content.length);
  if (stub.length >= content.length) return 0;
  const before = estimateTokens([entry.message]);
  const message = { ...entry.message, content: stub } as ChatMessage;
  entries[index] = { ...entry, message };
  return before - estimateTokens([message]);
}

/**
 * R20: images become a text note naming their file, oldest first, while `tokens` (the estimate of
 * `entries`) is over `budgetTokens`; returns the new estimate.
 */
function replaceImages(entries: StoredMessage[], tokens: number, budgetTokens: number): number {
  for (let index = 0; index < entries.length && tokens > budgetTokens; index += 1) {
    const entry = entries[index]!;
    const content = entry.message.content;
    if (typeof content === 'string' || !content?.some((part) => part.type === 'image_url')) continue;
    const paths = savedPaths(content);
    const parts = [...content];
    let imageIndex = 0;
    let current = estimateTokens([entry.message]);
    for (let part = 0; part < parts.length && tokens > budgetTokens; part += 1) {
      if (parts[part]!.type !== 'image_url') continue;
      parts[part] = { type: 'text', text: carriedImageText(paths[imageIndex]) };
      imageIndex += 1;
      const next = estimateTokens([{ ...entry.message, content: parts }]);
      tokens -= current - next;
      current = next;
    }
    entries[index] = { ...entry, message: { ...entry.message, content: parts } };
  }
  return tokens;
}
