// Block Kit for the memory browser (docs/product.md "Review memory"): the list of a space's documents
// (a thread message, an ephemeral answer, or App Home), and the modals behind it: a document with
// its pinned lines, its history, editing a part, pinning a line, undoing the latest change. Within
// Slack's limits (≤ 100 blocks, ≤ 3,000 characters per section and input, ≤ 150 per option value);
// whatever does not fit is paged or named, never cut silently.
import type { DocumentRecord, DocumentSummary, DocumentVersionRecord } from '../../core/store.js';
import type { DocumentPart } from '../../core/document-parts.js';
import { documentLine, formatSize, formatTime, historyLine, pinnedView, versionAuthor } from '../chat/memory-browser.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { actionIds, button, escapeMrkdwn, section, type Json } from './message-views.js';
import { codeSections, pagedModal, sectionLimit, type ModalView } from './modals.js';

/** Action ids of the browser; interactions dispatch on them. */
export const memoryActionIds = {
  /** The ⋯ menu of a document row; the chosen option's value is a DocumentRef with its action. */
  menu: 'hippo_doc_menu',
  history: 'hippo_doc_history',
  edit: 'hippo_doc_edit',
  undo: 'hippo_doc_undo',
  pin: 'hippo_doc_pin',
  /** Edit on a memory note: the documents that change wrote. */
  noteEdit: 'hippo_memory_edit',
  /** Next / previous page of the document list (a DocumentListRef). */
  listPage: 'hippo_doc_list_page',
} as const;

/** Callback ids of the modals whose submission Hippo handles. */
export const memoryCallbacks = { choosePart: 'hippo_edit_choose', save: 'hippo_edit_save', pin: 'hippo_pin_save', undo: 'hippo_undo_confirm' } as const;

/** What a person does to a document from the browser. */
export type DocumentAction = 'view' | 'history' | 'edit' | 'undo' | 'pin';

/**
 * Where a person acted from: the channel and thread of the clicked message, or null for App Home.
 * It decides the access check (a click in the space's own channel, or a membership look-up) and
 * where the thread hears of a change.
 */
export interface Origin {
  c: string | null;
  t: string | null;
}

/** A document action's value (short keys: an option value holds at most 150 characters). */
export interface DocumentRef extends Origin {
  a: DocumentAction;
  d: string;
}

/** A modal's private metadata: the document, the version shown, the part, how its inputs join. */
export interface EditRef extends Origin {
  d: string;
  v: number;
  i?: number;
  j?: string;
}

/** Documents per page of a list. */
const rowsPerPage = 40;
/** Inputs of one edit modal, and characters per input (Slack's limit for plain_text_input). */
export const slackPartLimits = { inputChars: 3_000, inputs: 4 };

const menuOptions: Array<[DocumentAction, string]> = [['view', 'View'], ['history', 'History'], ['edit', 'Edit'], ['undo', 'Undo last change'], ['pin', 'Pin a line']];

/** A document row: its line, with the ⋯ menu (View, History, Edit, Undo last change, Pin a line). */
export function documentRow(entry: DocumentSummary, origin: Origin): Json {
  const options = menuOptions.map(([action, label]) => ({
    text: { type: 'plain_text', text: label },
    value: JSON.stringify({ a: action, d: entry.document.id, c: origin.c, t: origin.t } satisfies DocumentRef),
  }));
  return { ...(section(mrkdwn(documentLine(entry))) as { [key: string]: Json }), accessory: { type: 'overflow', action_id: memoryActionIds.menu, options } };
}

/** A list reference for paging (space and origin). */
export interface DocumentListRef extends Origin {
  s: string;
  p: number;
}

/** The browser as blocks: a title line, one row per document (paged by 40). */
export function browserBlocks(spaceId: string, entries: readonly DocumentSummary[], origin: Origin, page = 0): Json[] {
  if (entries.length === 0) return [section('No memory documents in this space yet.')];
  const pages = Math.ceil(entries.length / rowsPerPage);
  const current = Math.min(Math.max(page, 0), pages - 1);
  const shown = entries.slice(current * rowsPerPage, (current + 1) * rowsPerPage);
  const blocks: Json[] = [
    section(`*Memory of this conversation* · ${entries.length} document${entries.length === 1 ? '' : 's'} · ⋯ on a document: View, History, Edit, Undo last change, Pin a line`),
    ...shown.map((entry) => documentRow(entry, origin)),
  ];
  if (pages > 1) {
    const ref = (next: number) => JSON.stringify({ s: spaceId, p: next, c: origin.c, t: origin.t } satisfies DocumentListRef);
    const navigation: Json[] = [];
    if (current > 0) navigation.push(button('◀ Previous', `${memoryActionIds.listPage}_previous`, ref(current - 1)));
    if (current < pages - 1) navigation.push(button('Next ▶', `${memoryActionIds.listPage}_next`, ref(current + 1)));
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `Documents ${current * rowsPerPage + 1}–${current * rowsPerPage + shown.length} of ${entries.length}` }] });
    blocks.push({ type: 'actions', elements: navigation });
  }
  return blocks;
}

/** A document modal: header, last change, pinned lines, its text (pinned lines marked 📌), and actions. */
export function documentModal(summary: DocumentSummary, origin: Origin, page: number): ModalView {
  const { document, lastChange } = summary;
  const ref: DocumentRef = { a: 'view', d: document.id, c: origin.c, t: origin.t };
  const pins = document.pinnedLines.length > 0
    ? [{ kind: 'text' as const, text: `*📌 Pinned (kept word for word by background memory):*\n${escapeMrkdwn(document.pinnedLines.map((line) => `• ${line}`).join('\n')).slice(0, sectionLimit)}` }]
    : [];
  const modal = pagedModal(document.path.slice(0, 24), [
    { kind: 'header', text: document.path },
    { kind: 'text', text: `v${document.version} · ${formatSize(document.content.length)} · last changed ${formatTime(lastChange.createdAt)} by ${escapeMrkdwn(versionAuthor(lastChange.author))}${lastChange.reason ? ` (${escapeMrkdwn(lastChange.reason)})` : ''}` },
    ...pins,
    ...codeSections(pinnedView(document) || '(empty)'),
  ], page, (next) => ({ kind: 'document', ref: JSON.stringify(ref), page: next }));
  const value = (action: DocumentAction) => JSON.stringify({ ...ref, a: action });
  modal.blocks.push({
    type: 'actions', block_id: 'hippo_doc_actions',
    elements: [button('History', memoryActionIds.history, value('history')), button('Edit', memoryActionIds.edit, value('edit'), 'primary'), button('Undo last change', memoryActionIds.undo, value('undo'), 'danger'), button('Pin a line', memoryActionIds.pin, value('pin'))],
  });
  return { ...modal, private_metadata: JSON.stringify(ref) };
}

/** A history page: each version with author, time, reason and a link to the thread it came from. */
export function historyModal(document: DocumentRecord, history: { versions: DocumentVersionRecord[]; total: number; offset: number; pageSize: number }, link: (version: DocumentVersionRecord) => string | null, origin: Origin): ModalView {
  const lines = history.versions.map((version) => {
    const url = link(version);
    return section(`${escapeMrkdwn(historyLine(version))}${url ? ` · <${url}|thread>` : ''}`.slice(0, sectionLimit));
  });
  const page = Math.floor(history.offset / history.pageSize);
  const pages = Math.max(1, Math.ceil(history.total / history.pageSize));
  const ref = JSON.stringify({ a: 'history', d: document.id, c: origin.c, t: origin.t } satisfies DocumentRef);
  const navigation: Json[] = [];
  if (page > 0) navigation.push(button('◀ Newer', `${actionIds.viewPage}_previous`, JSON.stringify({ kind: 'history', ref, page: page - 1 })));
  if (page < pages - 1) navigation.push(button('Older ▶', `${actionIds.viewPage}_next`, JSON.stringify({ kind: 'history', ref, page: page + 1 })));
  const blocks: Json[] = [
    { type: 'header', text: { type: 'plain_text', text: `History of ${document.path}`.slice(0, 150), emoji: true } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `Versions ${history.offset + 1}–${history.offset + history.versions.length} of ${history.total}, newest first. Nothing is ever removed from it.` }] },
    ...lines,
  ];
  if (navigation.length > 0) blocks.push({ type: 'actions', block_id: 'hippo_modal_pages', elements: navigation });
  return { type: 'modal', title: { type: 'plain_text', text: `History ${page + 1}/${pages}`.slice(0, 24) }, close: { type: 'plain_text', text: 'Close' }, blocks };
}

/** Choosing which part of a long document to edit. */
export function choosePartModal(document: DocumentRecord, parts: readonly DocumentPart[], ref: EditRef): ModalView {
  // Slack offers at most 100 options; a document with more parts is edited from its first 100.
  const options = parts.slice(0, 100).map((part) => ({ text: { type: 'plain_text', text: plain(part.title, 75) }, value: String(part.index) }));
  const more = parts.length > 100 ? `\n_${parts.length - 100} later parts are not offered here: edit them with \`@hippo remember\` / \`@hippo forget\`._` : '';
  return {
    type: 'modal', callback_id: memoryCallbacks.choosePart, private_metadata: JSON.stringify(ref),
    title: { type: 'plain_text', text: 'Edit memory' }, submit: { type: 'plain_text', text: 'Edit this part' }, close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      section(`*${escapeMrkdwn(document.path)}* (v${document.version}, ${formatSize(document.content.length)}) is too long for one form: choose the section to edit.${more}`),
      { type: 'input', block_id: 'part', label: { type: 'plain_text', text: 'Section' }, element: { type: 'static_select', action_id: 'part', options, initial_option: options[0] ?? null } },
    ],
  };
}

/** What a conflict shows above the inputs: who wrote in between, and the newer text of the part. */
export interface EditConflict {
  later: DocumentVersionRecord[];
  /** The part's text now, or null when the part is gone from the document. */
  newerText: string | null;
}

/** The edit form of one part: its text in inputs of ≤ 3,000 characters (Save writes a version by you). */
export function editModal(document: DocumentRecord, part: DocumentPart, pieces: readonly string[], ref: EditRef, conflict?: EditConflict): ModalView {
  const blocks: Json[] = [];
  if (conflict) {
    const who = conflict.later.map((version) => `v${version.version} by ${versionAuthor(version.author)} at ${formatTime(version.createdAt)}${version.reason ? ` (${version.reason})` : ''}`).join('; ');
    blocks.push(section(`:warning: *${escapeMrkdwn(document.path)} changed while you were editing* (${escapeMrkdwn(who)}). Nothing was saved. Your edit is still in the box below; the newer text of this part is shown first. Save again to replace the newer text with yours, or Cancel to keep it.`.slice(0, sectionLimit)));
    if (conflict.newerText === null) blocks.push(section('_This part is no longer in the document: saving adds your text where it was._'));
    else blocks.push(section('*The newer text:*'), ...codeSections(conflict.newerText || '(empty)').map((item) => section(item.text)));
  } else {
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `Editing *${escapeMrkdwn(document.path)}* — ${escapeMrkdwn(part.title)} (v${document.version}). Saving writes a new version by you; the history keeps every version.` }] });
  }
  pieces.forEach((piece, index) => {
    blocks.push({
      type: 'input', block_id: `piece_${index}`, optional: true,
      label: { type: 'plain_text', text: pieces.length > 1 ? `Text (${index + 1} of ${pieces.length})` : 'Text' },
      element: { type: 'plain_text_input', action_id: 'text', multiline: true, max_length: slackPartLimits.inputChars, ...(piece ? { initial_value: piece } : {}) },
    });
  });
  return {
    type: 'modal', callback_id: memoryCallbacks.save, private_metadata: JSON.stringify(ref),
    title: { type: 'plain_text', text: 'Edit memory' }, submit: { type: 'plain_text', text: 'Save' }, close: { type: 'plain_text', text: 'Cancel' },
    blocks,
  };
}

/** Choosing a line to pin (or unpin: pinned lines are marked 📌). */
export function pinModal(document: DocumentRecord, lines: ReadonlyArray<{ index: number; text: string }>, total: number, ref: EditRef): ModalView {
  const pinned = new Set(document.pinnedLines);
  const options = lines.map((line) => ({ text: { type: 'plain_text', text: plain(`${pinned.has(line.text) ? '📌 ' : ''}${line.text}`, 75) }, value: String(line.index) }));
  const more = total > lines.length ? `\n_Only the first ${lines.length} of ${total} lines are offered: pin a later one with \`@hippo pin <text>\`._` : '';
  return {
    type: 'modal', callback_id: memoryCallbacks.pin, private_metadata: JSON.stringify(ref),
    title: { type: 'plain_text', text: 'Pin a line' }, submit: { type: 'plain_text', text: 'Pin / unpin' }, close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      section(`Background memory keeps a pinned line of *${escapeMrkdwn(document.path)}* word for word. Choose a line; a line marked 📌 is unpinned instead.${more}`),
      { type: 'input', block_id: 'line', label: { type: 'plain_text', text: 'Line' }, element: { type: 'static_select', action_id: 'line', options } },
    ],
  };
}

/** Confirming the undo of a document's latest change: what it changed, who wrote it. */
export function undoModal(document: DocumentRecord, latest: DocumentVersionRecord, diff: string, ref: EditRef): ModalView {
  const parts = codeSections(diff || '(no line changes)');
  const shown = parts.slice(0, 8).map((item) => section(item.text));
  if (parts.length > shown.length) shown.push(section(`_The diff goes on (${parts.length - shown.length} more parts not shown here); History and View show every version in full._`));
  return {
    type: 'modal', callback_id: memoryCallbacks.undo, private_metadata: JSON.stringify(ref),
    title: { type: 'plain_text', text: 'Undo last change' }, submit: { type: 'plain_text', text: 'Undo it' }, close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      section(`Undo v${latest.version} of *${escapeMrkdwn(document.path)}*, by ${escapeMrkdwn(versionAuthor(latest.author))} at ${formatTime(latest.createdAt)}${latest.reason ? ` (${escapeMrkdwn(latest.reason)})` : ''}? The document goes back to v${latest.version - 1} as a new version by you; the history keeps both.`.slice(0, sectionLimit)),
      // One page of the diff at most: the rest is named, never cut silently.
      ...shown,
    ],
  };
}

/** Text for a plain_text field, within `limit` characters. */
function plain(text: string, limit: number): string {
  const line = text.replace(/\s+/g, ' ').trim() || '(blank)';
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/** Markdown of the shared texts as mrkdwn. */
export function mrkdwn(markdown: string): string {
  return markdownToMrkdwn(markdown).slice(0, sectionLimit);
}
