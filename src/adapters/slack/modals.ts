// The modals behind the View buttons: a memory change (compact diff and the document as written)
// and a reset (what the new context started from). Long content is paged within Slack's modal
// limits (≤ 100 blocks, ≤ 3,000 characters per section) with Previous / Next buttons.
import type { RunDocumentChange } from '../../core/store.js';
import { choiceText } from '../chat/memory-browser.js';
import { changeSummary, formatTokens, type DocumentDiff } from '../chat/notes.js';
import { splitMessage } from '../chat/split-message.js';
import { actionIds, button, escapeMrkdwn, section, type Json, type ResetViewRef } from './message-views.js';

/** Characters per section (Slack allows 3,000). */
export const sectionLimit = 2_900;
/** Text sections per page; keeps a page far below the 100-block limit and fast to render. */
const sectionsPerPage = 12;

/** A page request carried by the Previous / Next buttons. */
export interface PageRef {
  kind: 'memory' | 'reset' | 'document' | 'history';
  /** The memory run id, or the JSON of the ResetViewRef or of the document reference. */
  ref: string;
  page: number;
}

/** A modal view as Hippo builds it (its blocks can be added to). */
export type ModalView = { [key: string]: Json; blocks: Json[] };

/** A piece of a paged modal: a header, or a mrkdwn section. */
export type Item = { kind: 'header'; text: string } | { kind: 'text'; text: string };

/** The modal of a memory change, page `page` (from 0). */
export function memoryChangeModal(memoryRunId: string, diffs: DocumentDiff[], page: number): Json {
  const items: Item[] = [];
  if (diffs.length === 0) items.push({ kind: 'text', text: 'This memory change touched no documents.' });
  for (const diff of diffs) {
    items.push({ kind: 'header', text: `${changeSummary(diff)} (v${diff.previousVersion} → v${diff.version})` });
    items.push(...codeSections(diff.diff));
    items.push({ kind: 'text', text: diff.deleted ? '_The change deleted this document._' : '*The document as written:*' });
    if (!diff.deleted) items.push(...codeSections(diff.content || '(empty)'));
  }
  return pagedModal('Memory change', items, page, (next) => ({ kind: 'memory', ref: memoryRunId, page: next }));
}

/** The modal of a reset: messages carried over and MAIN.md as the new context read it. */
export function resetModal(ref: ResetViewRef, mainContent: string | null, page: number): Json {
  const carried = ref.carriedMessages === 1 ? '1 message' : `${ref.carriedMessages} messages`;
  const items: Item[] = [
    { kind: 'text', text: `Context ${ref.segmentOrdinal} started from fresh memory documents plus the last ${carried} of the previous context (${formatTokens(ref.tokensBefore)} → ${formatTokens(ref.tokensAfter)} tokens).` },
    { kind: 'header', text: ref.mainVersion === null ? 'MAIN.md' : `MAIN.md (v${ref.mainVersion}) at that moment` },
    ...codeSections(mainContent ?? '(no MAIN.md yet)'),
  ];
  return pagedModal('Context reset', items, page, (next) => ({ kind: 'reset', ref: JSON.stringify(ref), page: next }));
}

/** A text as code sections within the section limit (split outside nothing: it is all code). */
export function codeSections(text: string): Item[] {
  // Split before escaping would be simpler, but escaping lengthens text: split the escaped form.
  return splitMessage(`\`\`\`\n${escapeMrkdwn(text)}\n\`\`\``, { limit: sectionLimit, numbered: false }).map((part) => ({ kind: 'text', text: part }));
}

/** A modal showing page `page` of `items`, with Previous / Next buttons when there are several. */
export function pagedModal(title: string, items: Item[], page: number, refFor: (page: number) => PageRef): ModalView {
  const pages = paginate(items);
  const current = Math.min(Math.max(page, 0), pages.length - 1);
  const blocks: Json[] = (pages[current] ?? []).map((item) =>
    item.kind === 'header' ? { type: 'header', text: { type: 'plain_text', text: item.text.slice(0, 150), emoji: true } } : section(item.text),
  );
  if (pages.length > 1) {
    const navigation: Json[] = [];
    if (current > 0) navigation.push(button('◀ Previous', `${actionIds.viewPage}_previous`, JSON.stringify(refFor(current - 1))));
    if (current < pages.length - 1) navigation.push(button('Next page ▶', `${actionIds.viewPage}_next`, JSON.stringify(refFor(current + 1))));
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `Page ${current + 1} of ${pages.length}` }] });
    blocks.push({ type: 'actions', block_id: 'hippo_modal_pages', elements: navigation });
  }
  const suffix = pages.length > 1 ? ` ${current + 1}/${pages.length}` : '';
  return {
    type: 'modal',
    title: { type: 'plain_text', text: `${title}${suffix}`.slice(0, 24) },
    close: { type: 'plain_text', text: 'Close' },
    blocks,
  };
}

function paginate(items: Item[]): Item[][] {
  const pages: Item[][] = [[]];
  let sections = 0;
  for (const item of items) {
    const last = pages.at(-1) ?? [];
    if (item.kind === 'text' && sections >= sectionsPerPage) {
      // A header never ends a page: it moves with the text it introduces.
      const header = last.at(-1)?.kind === 'header' ? last.pop() : undefined;
      pages.push(header ? [header] : []);
      sections = 0;
    }
    pages.at(-1)?.push(item);
    if (item.kind === 'text') sections += 1;
  }
  return pages;
}

/** What an "undo both" button names: the run, the document, and the version the person saw. */
export interface UndoBothRef {
  r: string;
  d: string;
  v: number;
}

/** Where a revert modal's outcome is announced. */
export interface ThreadRef {
  channelId: string;
  threadTs: string;
}

/**
 * R13: the choice shown when documents changed again after the memory change being reverted:
 * per document, the later changes and "Undo both" or "Keep".
 */
export function revertChoiceModal(memoryRunId: string, changes: readonly RunDocumentChange[], thread: ThreadRef, intro?: string): Json {
  const blocks: Json[] = [];
  if (intro) blocks.push(section(escapeMrkdwn(intro)));
  for (const change of changes) {
    const ref: UndoBothRef = { r: memoryRunId, d: change.documentId, v: change.currentVersion };
    blocks.push(section(escapeMrkdwn(choiceText(change)).replace(/\*\*/g, '*').slice(0, sectionLimit)));
    blocks.push({
      type: 'actions',
      block_id: `hippo_undo_${change.documentId}`.slice(0, 255),
      elements: [button('Undo both', actionIds.memoryUndoBoth, JSON.stringify(ref), 'danger'), button('Keep', actionIds.memoryKeep, JSON.stringify(ref))],
    });
  }
  return {
    type: 'modal',
    title: { type: 'plain_text', text: 'Revert memory' },
    close: { type: 'plain_text', text: 'Cancel' },
    private_metadata: JSON.stringify(thread),
    blocks,
  };
}

/** A modal that only says how a choice ended. */
export function outcomeModal(text: string, title = 'Revert memory'): ModalView {
  return { type: 'modal', title: { type: 'plain_text', text: title.slice(0, 24) }, close: { type: 'plain_text', text: 'Close' }, blocks: [section(escapeMrkdwn(text))] };
}
