// The memory browser in Discord (docs/product.md "Review memory"): choosing a document shows it (pinned
// lines marked 📌) with History, Edit, Undo last change and Pin a line; Edit opens a modal (a long
// document one part at a time); a save is compare-and-set on the version: when someone wrote in
// between, the person sees the newer text and their edit (kept as a draft) and chooses. Every
// interaction is checked against the space's guild and channel (MEMORY_EDITORS for changes) first;
// a refusal is ephemeral and changes nothing. Answers are ephemeral; changes are told in the thread.
import { AttachmentBuilder, MessageFlags, type ButtonInteraction, type ModalSubmitInteraction, type RepliableInteraction, type StringSelectMenuInteraction } from 'discord.js';
import { ConflictError } from '../../core/errors.js';
import { compactDiff, diffLines } from '../../core/line-diff.js';
import { pinText } from '../../core/pinned-lines.js';
import type { DocumentRecord, SessionRecord } from '../../core/store.js';
import { decodeJoins, documentParts, encodeJoins, joinPieces, partPieces } from '../../core/document-parts.js';
import type { MemoryAction } from '../chat/memory-access.js';
import { historyPageSize, historyText, pinnedView, versionAuthor, versionSessions, formatTime } from '../chat/memory-browser.js';
import type { EditOutcome, Reviewer } from '../../core/agent.js';
import { accessRequest } from './memory-access.js';
import { enqueueText, type DiscordContext } from './context.js';
import { buttonId, type ButtonId } from './ids.js';
import { discordMessageLimit } from './message-views.js';
import { conflictButtons, discordPartLimits, documentButtons, documentMenus, editModalData, historyButtons, partMenus, pinModalData, undoButtons } from './memory-views.js';

type MemoryInteraction = ButtonInteraction | StringSelectMenuInteraction | ModalSubmitInteraction;
type Rows = ReturnType<typeof documentButtons>;

/** Actions this handler serves. */
export const memoryReviewActions: ReadonlySet<ButtonId['action']> = new Set(['docs', 'dview', 'dhist', 'dedit', 'dpart', 'dsave', 'dsaved', 'dredit', 'dundo', 'dundook', 'dpin', 'dpinsave', 'nedit']);

/** Which access each action needs. */
const accessOf: Record<string, MemoryAction> = {
  docs: 'view', dview: 'view', dhist: 'history', dedit: 'edit', dpart: 'edit', dsave: 'edit', dsaved: 'edit', dredit: 'edit', nedit: 'edit',
  dundo: 'revert', dundook: 'revert', dpin: 'pin', dpinsave: 'pin',
};

/** Handles the memory browser's menus, buttons and modals. */
export class DiscordMemoryInteractions {
  constructor(private readonly context: DiscordContext) {}

  async handle(interaction: MemoryInteraction, id: ButtonId, session: SessionRecord): Promise<void> {
    const documentId = await this.documentOf(interaction, id);
    // Modals must be the first answer: those actions check first, then show the modal or defer.
    const opensModal = id.action === 'dedit' || id.action === 'dpart' || id.action === 'dpin' || id.action === 'dredit' || id.action === 'nedit';
    if (!opensModal) await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    const allowed = documentId ? await this.authorize(interaction, documentId, accessOf[id.action] ?? 'view') : 'This memory document no longer exists.';
    if (typeof allowed === 'string') return this.answer(interaction, allowed, opensModal);
    const document = allowed;
    const who = this.reviewer(interaction, session);
    switch (id.action) {
      case 'docs':
      case 'dview':
        return this.view(interaction, session, document);
      case 'dhist':
        return this.history(interaction, session, document, id.document?.index ?? 0);
      case 'dedit':
        return this.startEdit(interaction, session, document);
      case 'nedit':
        return this.editFromNote(interaction, session, document, id.memoryRunId ?? '');
      case 'dpart': {
        const index = interaction.isStringSelectMenu() ? Number(interaction.values[0] ?? 0) : 0;
        return this.showEdit(interaction, session, document, index);
      }
      case 'dredit':
        return this.editAgain(interaction, session, document, id.memoryRunId ?? '');
      case 'dsave':
      case 'dsaved':
        return this.save(interaction, session, document, id, who);
      case 'dundo':
        return this.confirmUndo(interaction, session, document);
      case 'dundook':
        return this.undo(interaction, session, document, id.document?.version ?? 0, who);
      case 'dpin':
        if (interaction.isModalSubmit()) return;
        return interaction.showModal(pinModalData(buttonId('dpinsave', session.id, document.id, { index: 0, version: document.version }), document));
      case 'dpinsave':
        return this.pin(interaction, session, document, who);
      default:
        return this.answer(interaction, 'This button no longer works.', false);
    }
  }

  /** The document an interaction is about (a chosen option, a draft's, the first a note changed, or the id's). */
  private async documentOf(interaction: MemoryInteraction, id: ButtonId): Promise<string | null> {
    if (id.action === 'docs' && interaction.isStringSelectMenu()) return interaction.values[0] ?? null;
    if ((id.action === 'dredit' || id.action === 'dsaved') && id.memoryRunId) return (await this.context.stores.documents.draft(id.memoryRunId, interaction.user.id))?.documentId ?? null;
    if (id.action === 'nedit' && id.memoryRunId) {
      const changes = await this.context.stores.documents.runChanges(id.memoryRunId);
      return changes.find((change) => change.currentVersion > 0)?.documentId ?? null;
    }
    return id.memoryRunId;
  }

  /** The document when the person may do `action` to its space here, else the refusal's words. */
  private async authorize(interaction: MemoryInteraction, documentId: string, action: MemoryAction): Promise<DocumentRecord | string> {
    const document = await this.context.stores.documents.get(documentId);
    if (!document || document.deleted) return 'This memory document no longer exists.';
    const space = await this.context.stores.spaces.get(document.spaceId);
    if (!space) return 'This memory space no longer exists.';
    const decision = await this.context.memory.check(space, action, await accessRequest(this.context, interaction));
    if (decision.allowed) return document;
    this.context.log.info({ userId: interaction.user.id, documentId, action }, 'discord-memory-refused');
    return decision.reason;
  }

  private async view(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord): Promise<void> {
    const [latest] = (await this.context.stores.documents.history(document.id, { offset: 0, limit: 1 })).versions;
    const pins = document.pinnedLines.length > 0 ? `\n📌 ${document.pinnedLines.length} pinned line${document.pinnedLines.length === 1 ? '' : 's'} (marked 📌), kept word for word by background memory` : '';
    const head = `**${document.path}** · v${document.version} · ${document.content.length.toLocaleString('en-US')} chars${latest ? ` · last changed ${formatTime(latest.createdAt)} by ${versionAuthor(latest.author)}` : ''}${pins}`;
    return reply(interaction, `${head}\n\`\`\`md\n${pinnedView(document).replace(/```/g, "'''")}\n\`\`\``, `${document.path.replace(/\//g, '_')}`, documentButtons(session.id, document), head);
  }

  private async history(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, page: number): Promise<void> {
    const offset = page * historyPageSize;
    const history = await this.context.stores.documents.history(document.id, { offset, limit: historyPageSize });
    const sessions = await versionSessions(this.context.stores, history.versions);
    const text = historyText(document.path, { ...history, offset }, (version) => {
      const found = version.sessionId ? sessions.get(version.sessionId) : undefined;
      return found?.platform === 'discord' ? `https://discord.com/channels/${found.workspaceId}/${found.threadKey}` : null;
    });
    const pages = Math.max(1, Math.ceil(history.total / historyPageSize));
    return reply(interaction, text, 'history', historyButtons(session.id, document.id, page, pages));
  }

  /** Edit: the modal at once when the document fits one, else a choice of its parts. */
  private async startEdit(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord): Promise<void> {
    const parts = documentParts(document.content, discordPartLimits);
    if (parts.length === 1) return this.showEdit(interaction, session, document, 0);
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    const { rows, left } = partMenus(session.id, document, parts);
    const more = left > 0 ? `\n${left} later parts are not offered: edit them with \`remember\` / \`forget\`.` : '';
    await interaction.editReply({ content: `**${document.path}** is too long for one form: choose the section to edit.${more}`, components: rows, allowedMentions: { parse: [] } });
  }

  /** Edit on a memory note: its one document's form, or a menu of the documents it wrote. */
  private async editFromNote(interaction: MemoryInteraction, session: SessionRecord, first: DocumentRecord, memoryRunId: string): Promise<void> {
    const changed = new Set((await this.context.stores.documents.runChanges(memoryRunId)).map((change) => change.documentId));
    const entries = (await this.context.stores.documents.spaceDocuments(session.memorySpaceId)).filter((entry) => changed.has(entry.document.id));
    if (entries.length <= 1) return this.startEdit(interaction, session, first);
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    await interaction.editReply({ content: 'This change wrote several documents: choose one, then **Edit**.', components: documentMenus(session.id, entries).rows, allowedMentions: { parse: [] } });
  }

  private async showEdit(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, index: number): Promise<void> {
    const part = documentParts(document.content, discordPartLimits)[index];
    if (!part || interaction.isModalSubmit()) return this.answer(interaction, 'That part of the document is gone: open it again.', true);
    const { pieces } = partPieces(part.text, discordPartLimits.inputChars);
    if (pieces.length > discordPartLimits.inputs) return this.answer(interaction, `This part has a line longer than Discord's forms hold; edit it with \`remember\` / \`forget\` instead.`, true);
    await interaction.showModal(editModalData(buttonId('dsave', session.id, document.id, { index: part.index, version: document.version }), document, part, pieces));
  }

  /** Edit again after a conflict: the modal holds the person's kept text, over the newer version. */
  private async editAgain(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, draftId: string): Promise<void> {
    const draft = await this.context.stores.documents.draft(draftId, interaction.user.id);
    if (!draft || interaction.isModalSubmit()) return this.answer(interaction, 'This draft is gone (drafts last a day): open the document again.', true);
    const part = partOf(draft.part);
    const title = part.i === -1 ? 'the end of the document' : (documentParts(document.content, discordPartLimits)[part.i]?.title ?? 'the document');
    const shown = { index: part.i, key: { heading: '', occurrence: 0, chunk: 0 }, title, startLine: 0, endLine: 0, text: '' };
    await interaction.showModal(editModalData(buttonId('dsaved', session.id, draftId), document, shown, draft.pieces));
  }

  private async save(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, id: ButtonId, who: Reviewer): Promise<void> {
    if (!interaction.isModalSubmit()) return;
    const pieces = Array.from({ length: discordPartLimits.inputs }, (_unused, index) => fieldValue(interaction, `piece_${index}`)).filter((value): value is string => value !== null);
    let edit: { baseVersion: number; partIndex: number; text: string };
    if (id.action === 'dsaved') {
      const draft = await this.context.stores.documents.draft(id.memoryRunId ?? '', interaction.user.id);
      if (!draft) return this.answer(interaction, 'This draft is gone: open the document again.', false);
      const part = partOf(draft.part);
      edit = { baseVersion: draft.baseVersion, partIndex: part.i, text: joinPieces(pieces, decodeJoins(part.j)) };
    } else {
      const version = id.document?.version ?? 0;
      const base = version === document.version ? document.content : (await this.context.stores.documents.versions(document.id)).find((candidate) => candidate.version === version)?.content ?? '';
      const part = documentParts(base, discordPartLimits)[id.document?.index ?? 0];
      edit = { baseVersion: version, partIndex: id.document?.index ?? 0, text: joinPieces(pieces, partPieces(part?.text ?? '', discordPartLimits.inputChars).joins) };
    }
    const outcome = await this.context.agent.review.edit({ documentId: document.id, ...edit }, discordPartLimits, who, document);
    return this.saved(interaction, session, document, outcome, who);
  }

  private async saved(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, outcome: EditOutcome, who: Reviewer): Promise<void> {
    switch (outcome.status) {
      case 'saved':
        await this.tell(session, `edit:${outcome.document.id}:${outcome.document.version}`, `✏️ ${who.name} edited ${outcome.document.path} (now v${outcome.document.version})`);
        return reply(interaction, `✏️ Saved ${outcome.document.path} (now v${outcome.document.version}).`, 'hippo', []);
      case 'unchanged':
        return reply(interaction, 'Nothing changed, so nothing was saved.', 'hippo', []);
      case 'gone':
        return reply(interaction, 'This document (or the version you edited) is gone: nothing was saved.', 'hippo', []);
      case 'conflict': {
        const split = partPieces(outcome.text, discordPartLimits.inputChars);
        const partIndex = outcome.part?.index ?? -1;
        const draftId = await this.context.stores.documents.saveDraft({
          documentId: document.id, baseVersion: outcome.document.version, part: JSON.stringify({ i: partIndex, j: encodeJoins(split.joins) }), pieces: split.pieces, authorId: interaction.user.id,
        });
        const who = outcome.later.map((version) => `v${version.version} by ${versionAuthor(version.author)} at ${formatTime(version.createdAt)}${version.reason ? ` (${version.reason})` : ''}`).join('; ');
        const newer = outcome.part ? `**The newer text of this part:**\n\`\`\`md\n${outcome.part.text.replace(/```/g, "'''")}\n\`\`\`` : '_This part is no longer in the document: saving your text adds it at the end._';
        const text = `⚠️ **${document.path} changed while you were editing** (${who}). Nothing was saved.\n${newer}\n**Your edit (kept):**\n\`\`\`md\n${outcome.text.replace(/```/g, "'''")}\n\`\`\`\nEdit again to put your text over the newer version, or keep the newer text.`;
        return reply(interaction, text, 'edit-conflict', conflictButtons(session.id, document.id, draftId), `⚠️ **${document.path} changed while you were editing** (${who}). Nothing was saved: the newer text and your edit are attached.`);
      }
    }
  }

  private async confirmUndo(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord): Promise<void> {
    const [latest, previous] = (await this.context.stores.documents.history(document.id, { offset: 0, limit: 2 })).versions;
    if (!latest) return reply(interaction, `${document.path} has no change to undo.`, 'hippo', []);
    const diff = compactDiff(diffLines(previous && !previous.deleted ? previous.content : '', latest.deleted ? '' : latest.content)) || '(no line changes)';
    const text = `Undo v${latest.version} of **${document.path}**, by ${versionAuthor(latest.author)} at ${formatTime(latest.createdAt)}${latest.reason ? ` (${latest.reason})` : ''}? It goes back to v${latest.version - 1} as a new version by you; the history keeps both.\n\`\`\`diff\n${diff}\n\`\`\``;
    return reply(interaction, text, 'undo', undoButtons(session.id, document));
  }

  private async undo(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, shownVersion: number, who: Reviewer): Promise<void> {
    const outcome = await this.context.agent.review.undo(document.id, shownVersion, who);
    switch (outcome.status) {
      case 'reverted':
        await this.tell(session, `undo:${document.id}:${outcome.document.version}`, `↩️ ${who.name} undid v${outcome.undone.version} of ${document.path} (now v${outcome.document.version})`);
        return reply(interaction, `↩️ Undid v${outcome.undone.version} of ${document.path} (now v${outcome.document.version}).`, 'hippo', []);
      case 'changed-again':
        await reply(interaction, `${document.path} changed again while you were looking: this is the change that would be undone now.`, 'hippo', []);
        return this.confirmUndo(interaction, session, outcome.document);
      case 'nothing':
        return reply(interaction, `${document.path} has no change to undo.`, 'hippo', []);
    }
  }

  private async pin(interaction: MemoryInteraction, session: SessionRecord, document: DocumentRecord, who: Reviewer): Promise<void> {
    if (!interaction.isModalSubmit()) return;
    const wanted = pinText(fieldValue(interaction, 'line') ?? '').toLowerCase();
    const matches = [...new Set(document.content.split('\n').map(pinText).filter((line) => line !== '' && line.toLowerCase().includes(wanted)))];
    const [line] = matches;
    if (wanted === '' || !line) return reply(interaction, `No line of ${document.path} has that text: nothing was pinned.`, 'hippo', []);
    if (matches.length > 1) return reply(interaction, `Several lines of ${document.path} have that text; say more of the one to pin:\n${matches.slice(0, 10).map((match) => `• “${match}”`).join('\n')}`, 'hippo', []);
    try {
      if (document.pinnedLines.includes(line)) {
        await this.context.agent.review.unpin(document.id, line, who);
        return reply(interaction, `Unpinned from ${document.path}: “${line}”.`, 'hippo', []);
      }
      await this.context.agent.review.pin(document.id, line, who);
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      return reply(interaction, `${document.path} changed and no longer has that line: nothing was pinned.`, 'hippo', []);
    }
    await this.tell(session, `pin:${document.id}:${line.slice(0, 40)}`, `📌 ${who.name} pinned a line in ${document.path}: “${line}”`);
    return reply(interaction, `📌 Pinned in ${document.path}: “${line}”. Background memory keeps it word for word.`, 'hippo', []);
  }

  /** A refusal or a dead end, only to the person (before a modal: as the first answer). */
  private async answer(interaction: MemoryInteraction, text: string, firstAnswer: boolean): Promise<void> {
    if (firstAnswer && !interaction.deferred && !interaction.replied) {
      await interaction.reply({ content: text, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
      return;
    }
    await interaction.editReply({ content: text, components: [], allowedMentions: { parse: [] } });
  }

  private reviewer(interaction: MemoryInteraction, session: SessionRecord): Reviewer {
    const member = interaction.member;
    const name = member && 'displayName' in member ? member.displayName : (member?.nick ?? interaction.user.displayName);
    return { userId: interaction.user.id, name, sessionId: session.id };
  }

  /** Tells the session's thread what a person changed. */
  private tell(session: SessionRecord, key: string, text: string): Promise<void> {
    return enqueueText(this.context, { key: `discord:memory-review:${key}`, sessionId: session.id, channelId: session.threadKey }, text);
  }
}

/** A draft's part: its index in the newer version (-1: at the end) and its inputs' joins. */
function partOf(json: string): { i: number; j: string } {
  try {
    const parsed = JSON.parse(json) as { i?: unknown; j?: unknown };
    return { i: typeof parsed.i === 'number' ? parsed.i : -1, j: typeof parsed.j === 'string' ? parsed.j : '' };
  } catch {
    return { i: -1, j: '' };
  }
}

/** A text input's value, or null when the modal has no such input. */
function fieldValue(interaction: ModalSubmitInteraction, customId: string): string | null {
  try {
    return interaction.fields.getTextInputValue(customId);
  } catch {
    return null;
  }
}

/** An ephemeral answer; over Discord's 2,000 characters the text goes in an attached .md (with `short` as the message). */
async function reply(interaction: RepliableInteraction, text: string, fileName: string, components: Rows, short?: string): Promise<void> {
  if (!interaction.deferred && !interaction.replied) await interaction.deferReply({ flags: MessageFlags.Ephemeral });
  if (text.length <= discordMessageLimit) {
    await interaction.editReply({ content: text, components, files: [], allowedMentions: { parse: [] } });
    return;
  }
  const file = new AttachmentBuilder(Buffer.from(text, 'utf8'), { name: `${fileName}.md` });
  const content = `${short ?? text.split('\n')[0] ?? ''}`.slice(0, 1_800);
  await interaction.editReply({ content: `${content}\n📎 The full text (${text.length.toLocaleString('en-US')} characters) is attached.`, components, files: [file], allowedMentions: { parse: [] } });
}
