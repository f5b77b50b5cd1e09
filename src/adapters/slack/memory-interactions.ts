// The memory browser's clicks in Slack (docs/product.md "Review memory"): a document's ⋯ menu and the
// buttons of its modal open View, History, Edit, Undo last change and Pin a line; the Edit button
// of a memory note; paging. Every click is checked against the space's conversation first (its
// channel, or membership when it came from App Home) and MEMORY_EDITORS for changes; a refused
// click is answered only to the clicker and changes nothing. Submissions: memory-submissions.ts.
import { z } from 'zod';
import { compactDiff, diffLines } from '../../core/line-diff.js';
import { pinnableLines } from '../../core/pinned-lines.js';
import type { DocumentRecord, DocumentSummary, DocumentVersionRecord } from '../../core/store.js';
import { documentParts, encodeJoins, partPieces } from '../../core/document-parts.js';
import type { MemoryAction } from '../chat/memory-access.js';
import { historyPageSize, versionSessions } from '../chat/memory-browser.js';
import { section, type Json } from './message-views.js';
import {
  browserBlocks, choosePartModal, documentModal, documentRow, editModal, historyModal, memoryActionIds, pinModal, slackPartLimits, undoModal,
  type DocumentAction, type EditRef, type Origin,
} from './memory-views.js';
import { outcomeModal, type ModalView, type PageRef } from './modals.js';
import { postEphemeral } from './ephemeral.js';
import { parseJsonValue, teamOfBody, type BlockActionBody } from './payloads.js';
import { slackThreadLink, workspaceOf, type SlackContext } from './context.js';

const origin = { c: z.string().nullable(), t: z.string().nullable() };
const documentRef = z.object({ a: z.enum(['view', 'history', 'edit', 'undo', 'pin']), d: z.string(), ...origin });
const listRef = z.object({ s: z.string(), p: z.number().int().min(0), ...origin });

/** Which access each document action needs. */
const accessFor: Record<DocumentAction, MemoryAction> = { view: 'view', history: 'history', edit: 'edit', undo: 'revert', pin: 'pin' };

/** Who acts, from where: the team and user of the payload, and the conversation the click came from. */
export interface Actor {
  teamId: string;
  userId: string;
  /** The channel of the clicked message; null from App Home or a modal (then `origin` says where it began). */
  channelId: string | null;
}

/** True when the action id is one of the browser's; handled by SlackMemoryInteractions.handle. */
export function isMemoryAction(actionId: string): boolean {
  return Object.values(memoryActionIds).some((id) => actionId === id || actionId.startsWith(`${id}_`));
}

/** The first edit form of a document: the whole of it, or the choice of a part when it is long. */
export function editStart(document: DocumentRecord, where: Origin): ModalView {
  const parts = documentParts(document.content, slackPartLimits);
  const [only] = parts;
  if (parts.length === 1 && only) return editForm(document, only.index, where);
  return choosePartModal(document, parts, { d: document.id, v: document.version, ...where });
}

/** The edit form of one part of the document as it is now. */
export function editForm(document: DocumentRecord, partIndex: number, where: Origin): ModalView {
  const part = documentParts(document.content, slackPartLimits)[partIndex] ?? documentParts(document.content, slackPartLimits)[0];
  if (!part) return outcomeModal(`${document.path} cannot be edited here.`, 'Memory');
  const { pieces, joins } = partPieces(part.text, slackPartLimits.inputChars);
  const ref: EditRef = { d: document.id, v: document.version, i: part.index, j: encodeJoins(joins), ...where };
  return editModal(document, part, pieces, ref);
}

/** The memory browser's clicks in Slack: each checked first, then shown in a modal or refused to the clicker only. */
export class SlackMemoryInteractions {
  constructor(private readonly context: SlackContext) {}

  /** A click of the browser (`value`: the button's value or the chosen option's). */
  async handle(click: BlockActionBody, teamId: string, actionId: string, value: string): Promise<void> {
    const actor: Actor = { teamId, userId: click.user.id, channelId: click.channel?.id ?? null };
    if (actionId.startsWith(memoryActionIds.listPage)) {
      const ref = parseJsonValue(listRef, value);
      return ref ? this.turnListPage(click, actor, ref) : this.refuse(click, 'This button no longer works: say `@hippo memory` again.');
    }
    if (actionId === memoryActionIds.noteEdit) return this.editFromNote(click, actor, value);
    const ref = parseJsonValue(documentRef, value);
    if (!ref) return this.refuse(click, 'This button no longer works: say `@hippo memory` again.');
    // A message click happened in the message's channel; a click in one of our modals or in App
    // Home names no channel (membership decides), its value says where the person started from.
    const where: Origin = click.channel ? { c: click.channel.id, t: click.message?.thread_ts ?? click.message?.ts ?? null } : { c: ref.c, t: ref.t };
    return this.openDocumentAction(click, actor, ref.a, ref.d, where);
  }

  /** Opens what a document action shows (after the access check). */
  async openDocumentAction(click: BlockActionBody, actor: Actor, action: DocumentAction, documentId: string, where: Origin, page = 0): Promise<void> {
    const allowed = await this.authorize(actor, documentId, accessFor[action]);
    if (typeof allowed === 'string') return this.refuse(click, allowed);
    const document = allowed;
    switch (action) {
      case 'view':
        return this.show(click, documentModal(await this.summaryOf(document), where, page), page > 0);
      case 'history':
        return this.show(click, await this.historyView(actor.teamId, document, where, page), page > 0);
      case 'edit':
        return this.show(click, editStart(document, where));
      case 'undo': {
        const { versions } = await this.context.stores.documents.history(document.id, { offset: 0, limit: 2 });
        const [latest, previous] = versions;
        if (!latest || latest.version <= 0) return this.show(click, outcomeModal(`${document.path} has no change to undo.`, 'Memory'));
        const diff = compactDiff(diffLines(previous && !previous.deleted ? previous.content : '', latest.deleted ? '' : latest.content));
        return this.show(click, undoModal(document, latest, diff, { d: document.id, v: document.version, ...where }));
      }
      case 'pin': {
        const total = pinnableLines(document.content, Number.MAX_SAFE_INTEGER).length;
        if (total === 0) return this.show(click, outcomeModal(`${document.path} has no line to pin.`, 'Memory'));
        return this.show(click, pinModal(document, pinnableLines(document.content, 100), total, { d: document.id, v: document.version, ...where }));
      }
    }
  }

  /** Edit on a memory note: the one document it changed, or a list of them to choose from. */
  private async editFromNote(click: BlockActionBody, actor: Actor, memoryRunId: string): Promise<void> {
    const where: Origin = { c: click.channel?.id ?? null, t: click.message?.thread_ts ?? click.message?.ts ?? null };
    const changes = (await this.context.stores.documents.runChanges(memoryRunId)).filter((change) => change.currentVersion > 0);
    const documents = (await Promise.all(changes.map((change) => this.context.stores.documents.get(change.documentId)))).filter((document): document is DocumentRecord => document !== null && !document.deleted);
    const [first] = documents;
    if (!first) return this.refuse(click, 'The documents of this memory change no longer exist.');
    if (documents.length === 1) return this.openDocumentAction(click, actor, 'edit', first.id, where);
    const allowed = await this.authorize(actor, first.id, 'edit');
    if (typeof allowed === 'string') return this.refuse(click, allowed);
    const rows = await Promise.all(documents.map(async (document) => documentRow(await this.summaryOf(document), where)));
    return this.show(click, { type: 'modal', title: { type: 'plain_text', text: 'Edit memory' }, close: { type: 'plain_text', text: 'Close' }, blocks: [section('This change wrote several documents: choose one (⋯ → Edit).'), ...rows] });
  }

  /** Next / previous page of a document list, in place (the list message, ephemeral or not). */
  private async turnListPage(click: BlockActionBody, actor: Actor, ref: z.infer<typeof listRef>): Promise<void> {
    const space = await this.context.stores.spaces.get(ref.s);
    if (!space) return this.refuse(click, 'This memory space no longer exists.');
    const decision = await this.context.memory.check(space, 'view', { platform: 'slack', workspaceId: actor.teamId, channelId: actor.channelId, userId: actor.userId });
    if (!decision.allowed) return this.refuse(click, decision.reason);
    if (!click.response_url) return;
    const blocks = browserBlocks(space.id, await this.context.stores.documents.spaceDocuments(space.id), { c: ref.c, t: ref.t }, ref.p);
    // The list's own message (ephemeral or not) is replaced in place through its response_url.
    await fetch(click.response_url, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(10_000),
      body: JSON.stringify({ replace_original: true, text: 'Memory of this conversation', blocks }),
    });
  }

  /** Page turns inside the document and history modals (kinds 'document' and 'history'). */
  async turnMemoryPage(click: BlockActionBody, teamId: string, ref: PageRef): Promise<void> {
    const documentRefValue = parseJsonValue(documentRef, ref.ref);
    if (!documentRefValue) return this.refuse(click, 'This page can no longer be shown.');
    const actor: Actor = { teamId, userId: click.user.id, channelId: null };
    return this.openDocumentAction(click, actor, ref.kind === 'history' ? 'history' : 'view', documentRefValue.d, { c: documentRefValue.c, t: documentRefValue.t }, ref.page);
  }

  /** The document if the actor may do `action` to its space, else the refusal's words. */
  async authorize(actor: Actor, documentId: string, action: MemoryAction): Promise<DocumentRecord | string> {
    // Who may use Hippo at all (ALLOWED_USERS) first, then who may do this to this space's memory.
    const steer = await this.context.access.maySteer(this.context.people.requester(actor.teamId, actor.userId));
    if (!steer.allowed) return steer.message;
    const document = await this.context.stores.documents.get(documentId);
    if (!document || document.deleted) return 'This memory document no longer exists.';
    const space = await this.context.stores.spaces.get(document.spaceId);
    if (!space) return 'This memory space no longer exists.';
    const decision = await this.context.memory.check(space, action, { platform: 'slack', workspaceId: actor.teamId, channelId: actor.channelId, userId: actor.userId });
    if (!decision.allowed) {
      this.context.log.info({ userId: actor.userId, documentId, action }, 'slack-memory-refused');
      return decision.reason;
    }
    return document;
  }

  /** The document with its last change (the browser's line). */
  async summaryOf(document: DocumentRecord): Promise<DocumentSummary> {
    const [latest] = (await this.context.stores.documents.history(document.id, { offset: 0, limit: 1 })).versions;
    return { document, lastChange: latest ?? { version: document.version, author: { kind: 'system' }, reason: '', createdAt: document.updatedAt } };
  }

  /** A history page with links to the thread each version came from. */
  private async historyView(teamId: string, document: DocumentRecord, where: Origin, page: number): Promise<ModalView> {
    const { identity } = await workspaceOf(this.context, teamId);
    const offset = page * historyPageSize;
    const history = await this.context.stores.documents.history(document.id, { offset, limit: historyPageSize });
    const sessions = await versionSessions(this.context.stores, history.versions);
    const link = (version: DocumentVersionRecord): string | null => {
      const session = version.sessionId ? sessions.get(version.sessionId) : undefined;
      return session?.platform === 'slack' ? slackThreadLink(identity, session.channelId, session.threadKey) : null;
    };
    return historyModal(document, { ...history, offset, pageSize: historyPageSize }, link, where);
  }

  /**
   * Shows a modal: pushed over the modal the click came from, opened fresh from a message or App
   * Home; a page turn updates the modal in place.
   */
  private async show(click: BlockActionBody, view: Json, inPlace = false): Promise<void> {
    const inModal = click.view !== undefined && click.view.type !== 'home';
    if (inPlace && inModal && click.view) {
      await (await workspaceOf(this.context, teamOfBody(click))).client.apiCall('views.update', { view_id: click.view.id, view });
      return;
    }
    if (!click.trigger_id) return;
    await (await workspaceOf(this.context, teamOfBody(click))).client.apiCall(inModal ? 'views.push' : 'views.open', { trigger_id: click.trigger_id, view });
  }

  /** A refusal or a stale button, only to the clicker: ephemeral in the thread, else a small modal. */
  async refuse(click: BlockActionBody, text: string): Promise<void> {
    if (click.channel && click.message) {
      await postEphemeral(this.context, { teamId: teamOfBody(click), channelId: click.channel.id, userId: click.user.id, threadTs: click.message.thread_ts ?? click.message.ts }, text);
      return;
    }
    if (click.trigger_id) await this.show(click, outcomeModal(text, 'Memory'));
  }
}
