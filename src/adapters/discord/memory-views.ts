// Discord components of the memory browser (docs/product.md "Review memory"): menus to choose a document
// or a part, the buttons of a document, and the modals to edit a part (at most 5 text inputs of at
// most 4,000 characters each: a long document is edited one part at a time) and to pin a line.
// Whatever does not fit Discord's limits is named, never cut silently. Pure: JSON only.
import {
  ButtonStyle, ComponentType, TextInputStyle,
  type APIActionRowComponent, type APIButtonComponentWithCustomId, type APIComponentInMessageActionRow, type APIModalInteractionResponseCallbackData,
  type APISelectMenuOption,
} from 'discord.js';
import type { DocumentRecord, DocumentSummary } from '../../core/store.js';
import type { DocumentPart } from '../../core/document-parts.js';
import { formatSize, versionAuthor } from '../chat/memory-browser.js';
import { buttonId } from './ids.js';

/** Text inputs of one edit modal, and characters per input (Discord's limits). */
export const discordPartLimits = { inputChars: 4_000, inputs: 5 };

/** Options per select menu, and menus per message (Discord: 25, and 5 rows). */
const optionsPerMenu = 25;
const menusPerMessage = 4;

type Row = APIActionRowComponent<APIComponentInMessageActionRow>;

/** Menus to choose a document (25 per menu, 4 menus); `left` names what they could not offer. */
export function documentMenus(sessionId: string, entries: readonly DocumentSummary[]): { rows: Row[]; left: number } {
  const offered = entries.slice(0, optionsPerMenu * menusPerMessage);
  const rows: Row[] = [];
  for (let start = 0; start < offered.length; start += optionsPerMenu) {
    const options: APISelectMenuOption[] = offered.slice(start, start + optionsPerMenu).map(({ document, lastChange }) => ({
      label: clip(document.path, 100),
      value: document.id,
      description: clip(`${formatSize(document.content.length)} · v${document.version} · by ${versionAuthor(lastChange.author)}`, 100),
    }));
    rows.push({
      type: ComponentType.ActionRow,
      components: [{ type: ComponentType.StringSelect, custom_id: buttonId('docs', sessionId, undefined, { index: start / optionsPerMenu, version: 0 }), placeholder: offered.length > optionsPerMenu ? `Choose a document (${start + 1}–${start + options.length})` : 'Choose a document to view, edit, revert or pin', options }],
    });
  }
  return { rows, left: entries.length - offered.length };
}

/** The buttons under a document: History, Edit, Undo last change, Pin a line. */
export function documentButtons(sessionId: string, document: DocumentRecord): Row[] {
  const at = { index: 0, version: document.version };
  return [row([
    button('History', buttonId('dhist', sessionId, document.id, at)),
    button('Edit', buttonId('dedit', sessionId, document.id, at), ButtonStyle.Primary),
    button('Undo last change', buttonId('dundo', sessionId, document.id, at), ButtonStyle.Danger),
    button('Pin a line', buttonId('dpin', sessionId, document.id, at)),
  ])];
}

/** Newer / Older buttons of a history page. */
export function historyButtons(sessionId: string, documentId: string, page: number, pages: number): Row[] {
  const buttons: APIButtonComponentWithCustomId[] = [];
  if (page > 0) buttons.push(button('◀ Newer', buttonId('dhist', sessionId, documentId, { index: page - 1, version: 0 })));
  if (page < pages - 1) buttons.push(button('Older ▶', buttonId('dhist', sessionId, documentId, { index: page + 1, version: 0 })));
  return buttons.length > 0 ? [row(buttons)] : [];
}

/** Menus to choose the part of a long document to edit (25 per menu, 4 menus); `left` as above. */
export function partMenus(sessionId: string, document: DocumentRecord, parts: readonly DocumentPart[]): { rows: Row[]; left: number } {
  const offered = parts.slice(0, optionsPerMenu * menusPerMessage);
  const rows: Row[] = [];
  for (let start = 0; start < offered.length; start += optionsPerMenu) {
    const options: APISelectMenuOption[] = offered.slice(start, start + optionsPerMenu).map((part) => ({ label: clip(part.title, 100), value: String(part.index) }));
    rows.push({ type: ComponentType.ActionRow, components: [{ type: ComponentType.StringSelect, custom_id: buttonId('dpart', sessionId, document.id, { index: start / optionsPerMenu, version: document.version }), placeholder: 'Choose the section to edit', options }] });
  }
  return { rows, left: parts.length - offered.length };
}

/** The edit modal of a part: one paragraph input per piece (≤ 5, ≤ 4,000 characters each). */
export function editModalData(customId: string, document: DocumentRecord, part: DocumentPart, pieces: readonly string[]): APIModalInteractionResponseCallbackData {
  return {
    custom_id: customId,
    title: clip(`Edit ${document.path}`, 45),
    components: pieces.slice(0, discordPartLimits.inputs).map((piece, index) => ({
      type: ComponentType.ActionRow,
      components: [{
        type: ComponentType.TextInput, custom_id: `piece_${index}`, style: TextInputStyle.Paragraph, required: false,
        label: clip(pieces.length > 1 ? `${part.title} (${index + 1} of ${pieces.length})` : part.title === 'the whole document' ? `${document.path} (v${document.version})` : part.title, 45),
        max_length: discordPartLimits.inputChars, ...(piece ? { value: piece } : {}),
      }],
    })),
  };
}

/** The modal asking which line to pin (or unpin). */
export function pinModalData(customId: string, document: DocumentRecord): APIModalInteractionResponseCallbackData {
  return {
    custom_id: customId,
    title: clip(`Pin a line of ${document.path}`, 45),
    components: [{
      type: ComponentType.ActionRow,
      components: [{ type: ComponentType.TextInput, custom_id: 'line', style: TextInputStyle.Short, required: true, label: 'The line (or a unique part of it)', max_length: 1_000 }],
    }],
  };
}

/** Buttons after an edit lost a race: edit again from your text (over the newer version), or keep the newer one. */
export function conflictButtons(sessionId: string, documentId: string, draftId: string): Row[] {
  return [row([
    button('Edit again with my text', buttonId('dredit', sessionId, draftId), ButtonStyle.Primary),
    button('Keep the newer text', buttonId('dview', sessionId, documentId)),
  ])];
}

/** The confirm button of an undo. */
export function undoButtons(sessionId: string, document: DocumentRecord): Row[] {
  return [row([button(`Undo v${document.version}`, buttonId('dundook', sessionId, document.id, { index: 0, version: document.version }), ButtonStyle.Danger)])];
}

function button(label: string, customId: string, style: ButtonStyle.Primary | ButtonStyle.Secondary | ButtonStyle.Danger = ButtonStyle.Secondary): APIButtonComponentWithCustomId {
  return { type: ComponentType.Button, style, custom_id: customId, label: clip(label, 80) };
}

function row(components: APIButtonComponentWithCustomId[]): Row {
  return { type: ComponentType.ActionRow, components };
}

function clip(text: string, limit: number): string {
  const line = text.replace(/\s+/g, ' ').trim() || '(blank)';
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}
