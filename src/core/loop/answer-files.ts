// Which workspace files an answer sends (attach_file): the successful file-delivering calls since
// the previous answer. Read from the stored context, so an answer re-sent after a crash names the
// same files (their uploads are keyed by call, so none is sent twice).
import type { AnswerFile } from '../events.js';
import { contentText, type ChatMessage } from '../messages.js';
import type { StoredMessage } from '../store.js';

/** The files the answer at `answerSeq` sends, in the order they were asked for. */
export function answerFiles(entries: readonly StoredMessage[], answerSeq: number, deliversFile: (tool: string) => boolean): AnswerFile[] {
  const end = entries.findIndex((entry) => entry.seq === answerSeq);
  if (end < 0) return [];
  const results = new Map<string, string>();
  const files: AnswerFile[] = [];
  for (let index = end - 1; index >= 0; index -= 1) {
    const entry = entries[index];
    if (!entry || entry.isInit) break;
    if (entry.isMarker) continue;
    const message: ChatMessage = entry.message;
    if (message.role === 'tool' && message.tool_call_id) results.set(message.tool_call_id, contentText(message.content));
    if (message.role !== 'assistant') continue;
    if (!message.tool_calls?.length) break; // the previous answer
    for (const call of [...message.tool_calls].reverse()) {
      const result = results.get(call.id);
      // A failed call (its result is an error) sends nothing.
      if (!deliversFile(call.function.name) || result === undefined || result.startsWith('Error')) continue;
      const path = pathArgument(call.function.arguments);
      if (path !== null) files.unshift({ callId: call.id, path });
    }
  }
  return files;
}

function pathArgument(json: string): string | null {
  try {
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === 'object' && parsed !== null && 'path' in parsed && typeof parsed.path === 'string' ? parsed.path : null;
  } catch {
    return null;
  }
}
