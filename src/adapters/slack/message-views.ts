// Block Kit for the messages Hippo posts in a thread: the run status card and the collapsed memory
// and reset notes. Plain JSON (stored in the outbox as is), built from the platform-agnostic texts.
import { isActive, isResumable, isStoppable, runStatusLine, type RunStatus } from '../chat/run-status.js';

/** A JSON value (what Block Kit and the outbox payload are made of). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The action ids Hippo's buttons carry; interactions.ts dispatches on them. */
export const actionIds = {
  pause: 'hippo_pause',
  resume: 'hippo_resume',
  stop: 'hippo_stop',
  memoryView: 'hippo_memory_view',
  memoryRevert: 'hippo_memory_revert',
  /** R13: undo a document's change together with the later changes the person was shown. */
  memoryUndoBoth: 'hippo_memory_undo_both',
  memoryKeep: 'hippo_memory_keep',
  memoryAck: 'hippo_memory_ack',
  resetView: 'hippo_reset_view',
  viewPage: 'hippo_view_page',
} as const;

/** A message body: notification text (escaped like any text Slack parses: it pings too) plus blocks. */
export interface SlackMessageBody {
  text: string;
  blocks: Json[];
}

/** Escapes text for mrkdwn fields (Slack reads &, < and > as markup). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A mrkdwn section block. */
export function section(text: string): Json {
  return { type: 'section', text: { type: 'mrkdwn', text } };
}

/** A button element. */
export function button(text: string, actionId: string, value: string, style?: 'primary' | 'danger'): { [key: string]: Json } {
  return { type: 'button', text: { type: 'plain_text', text, emoji: true }, action_id: actionId, value, ...(style ? { style } : {}) };
}

/** The run status card with the buttons that make sense in its state. */
export function runCard(status: RunStatus, sessionId: string, now: number): SlackMessageBody {
  const line = runStatusLine(status, now);
  const buttons: Json[] = [];
  if (isActive(status)) buttons.push(button('Pause', actionIds.pause, sessionId));
  if (isStoppable(status)) buttons.push(button('Stop', actionIds.stop, sessionId, 'danger'));
  if (isResumable(status)) buttons.push(button('Resume', actionIds.resume, sessionId, 'primary'));
  const blocks: Json[] = [section(escapeMrkdwn(line))];
  if (buttons.length > 0) blocks.push({ type: 'actions', block_id: 'hippo_run_controls', elements: buttons });
  return { text: escapeMrkdwn(line), blocks };
}

/** The collapsed note after a memory change: one line and View / Edit / Revert / 👍. */
export function memoryNote(line: string, memoryRunId: string): SlackMessageBody {
  const revert = button('Revert', actionIds.memoryRevert, memoryRunId, 'danger');
  revert['confirm'] = {
    title: { type: 'plain_text', text: 'Revert this memory change?' },
    text: { type: 'plain_text', text: 'The documents go back to how they were before this change; if one changed again since, you are shown that and choose. Everything stays in the history.' },
    confirm: { type: 'plain_text', text: 'Revert' },
    deny: { type: 'plain_text', text: 'Cancel' },
  };
  return {
    text: escapeMrkdwn(line),
    blocks: [
      section(escapeMrkdwn(line)),
      { type: 'actions', block_id: 'hippo_memory_note', elements: [button('View', actionIds.memoryView, memoryRunId), button('Edit', 'hippo_memory_edit', memoryRunId), revert, button('👍', actionIds.memoryAck, memoryRunId)] },
    ],
  };
}

/** What a reset note's View button needs to show the new context's starting point. */
export interface ResetViewRef {
  sessionId: string;
  segmentOrdinal: number;
  carriedMessages: number;
  tokensBefore: number;
  tokensAfter: number;
  /** MAIN.md as the new context read it (document id and version), when it existed. */
  mainDocumentId: string | null;
  mainVersion: number | null;
}

/** The note after a context reset: one line and View. */
export function resetNote(line: string, ref: ResetViewRef): SlackMessageBody {
  return {
    text: escapeMrkdwn(line),
    blocks: [
      section(escapeMrkdwn(line)),
      { type: 'actions', block_id: 'hippo_reset_note', elements: [button('View', actionIds.resetView, JSON.stringify(ref))] },
    ],
  };
}
