// Discord message bodies for what Hippo posts: answers split at 2,000 characters, the run's status
// card with Pause / Resume and the run's checklist (task-checklist.ts), compact memory and reset
// notes with their buttons. Pure: the words come from the shared chat pieces, this file only wraps
// them in Discord's JSON.
import {
  ButtonStyle, ComponentType, MessageFlags,
  type APIActionRowComponent, type APIAllowedMentions, type APIButtonComponentWithCustomId, type APIComponentInMessageActionRow,
  type RESTPostAPIChannelMessageJSONBody,
} from 'discord.js';
import type { AgentEvent } from '../../core/events.js';
import { memoryNoteLine, resetNoteLine } from '../chat/notes.js';
import { isActive, isResumable, isStoppable, runStatusLine, type RunStatus } from '../chat/run-status.js';
import { splitMessage } from '../chat/split-message.js';
import type { TaskList } from '../chat/task-list.js';
import { buttonId } from './ids.js';
import { taskChecklistEmbed } from './task-checklist.js';

/** Discord's limit on message content, in characters. */
export const discordMessageLimit = 2_000;

/** Accent colour of Hippo's note embeds (a soft purple). */
const noteColour = 0x8e7cc3;

/** Hippo never pings anyone by echoing model text: no @everyone, roles or users. */
const noMentions: APIAllowedMentions = { parse: [] };

type ActionRow = APIActionRowComponent<APIComponentInMessageActionRow>;

/**
 * Answers show no link embeds unless an operator allows them (LINK_PREVIEWS=on): Discord fetches
 * every link it embeds, and a URL the model wrote can carry what it read to that host.
 */
function embedFlags(linkPreviews: boolean): Pick<RESTPostAPIChannelMessageJSONBody, 'flags'> {
  return linkPreviews ? {} : { flags: MessageFlags.SuppressEmbeds };
}

/** One message body per part of a Markdown text, split safely (never inside a code block). */
export function textBodies(text: string, linkPreviews = false): RESTPostAPIChannelMessageJSONBody[] {
  const content = text.trim() === '' ? '(empty answer)' : text;
  return splitMessage(content, { limit: discordMessageLimit }).map((part) => ({ content: part, allowed_mentions: noMentions, ...embedFlags(linkPreviews) }));
}

/** Room for a streamed answer in one message (with its cursor); the final answer is split as usual. */
export const discordStreamChars = discordMessageLimit - 100;

/** The message an answer streams into: the text so far, and a cursor while it still forms. */
export function streamBody(text: string, forming: boolean, linkPreviews = false): RESTPostAPIChannelMessageJSONBody {
  return { content: forming ? `${text} ▍` : text, allowed_mentions: noMentions, ...embedFlags(linkPreviews) };
}

/**
 * The status card of a run: one line, with Pause and Stop while it works and Resume when it
 * stopped; below it, the run's tool calls and the plan as a checklist (an embed) once there are any.
 */
export function statusCardBody(sessionId: string, status: RunStatus, now: number, tasks?: TaskList): RESTPostAPIChannelMessageJSONBody {
  const buttons: APIButtonComponentWithCustomId[] = [];
  if (isActive(status)) buttons.push(button('⏸️', 'Pause', buttonId('pause', sessionId)));
  if (isStoppable(status)) buttons.push(button('⏹️', 'Stop', buttonId('stop', sessionId), ButtonStyle.Danger));
  if (isResumable(status)) buttons.push(button('▶️', 'Resume', buttonId('resume', sessionId), ButtonStyle.Primary));
  const checklist = tasks ? taskChecklistEmbed(tasks) : null;
  return {
    content: runStatusLine(status, now),
    // Always sent, so an edit states the whole card (an edit without `embeds` would keep the old one).
    embeds: checklist ? [checklist] : [],
    components: buttons.length ? [row(buttons)] : [],
    allowed_mentions: noMentions,
  };
}

/** What people already did to a memory note. */
export interface NoteState {
  revertedBy?: string;
  reviewedBy?: string;
}

/** The buttons of a memory note: View, Edit, Revert, 👍 (done actions show who did them, disabled). */
export function memoryNoteComponents(sessionId: string, memoryRunId: string, state: NoteState = {}): ActionRow[] {
  const view = button('🔍', 'View', buttonId('view', sessionId, memoryRunId));
  const edit = button('✏️', 'Edit', buttonId('nedit', sessionId, memoryRunId));
  const revert = state.revertedBy
    ? { ...button('↩️', `Reverted by ${clip(state.revertedBy)}`, buttonId('revert', sessionId, memoryRunId)), disabled: true }
    : button('↩️', 'Revert', buttonId('revert', sessionId, memoryRunId), ButtonStyle.Danger);
  const review = state.reviewedBy
    ? { ...button('👍', clip(state.reviewedBy), buttonId('review', sessionId, memoryRunId)), disabled: true }
    : button('👍', '', buttonId('review', sessionId, memoryRunId));
  return [row([view, edit, revert, review])];
}

/** The compact note after a summarizer run changed memory. */
export function memoryNoteBody(event: Extract<AgentEvent, { type: 'memory-updated' }>): RESTPostAPIChannelMessageJSONBody {
  return {
    embeds: [{ description: memoryNoteLine(event), color: noteColour }],
    // A run a person asked for that changed nothing has nothing to view or revert.
    components: event.changes.length > 0 ? memoryNoteComponents(event.session.id, event.memoryRunId) : [],
    allowed_mentions: noMentions,
  };
}

/** The note after a context reset, with a button that shows the memory it continues from. */
export function resetNoteBody(event: Extract<AgentEvent, { type: 'context-reset' }>): RESTPostAPIChannelMessageJSONBody {
  return {
    embeds: [{ description: resetNoteLine(event), color: noteColour }],
    components: [row([button('🧠', 'View memory', buttonId('memory', event.session.id))])],
    allowed_mentions: noMentions,
  };
}

function button(emoji: string, label: string, customId: string, style: ButtonStyle.Primary | ButtonStyle.Secondary | ButtonStyle.Danger = ButtonStyle.Secondary): APIButtonComponentWithCustomId {
  return { type: ComponentType.Button, style, custom_id: customId, emoji: { name: emoji }, ...(label ? { label } : {}) };
}

function row(components: APIButtonComponentWithCustomId[]): ActionRow {
  return { type: ComponentType.ActionRow, components };
}

/** Button labels are limited to 80 characters. */
function clip(text: string): string {
  return text.length <= 60 ? text : `${text.slice(0, 59)}…`;
}
