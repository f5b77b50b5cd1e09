// Buttons and the slash command. Every interaction is acknowledged first (deferReply: Discord
// wants an answer within 3 s) and then answered by editing that reply: ephemeral for what only the
// clicker needs (status, diffs, confirmations), public for commands that change the session.
// Long answers become an attached .md file. Each interaction is handled once (event log).
import {
  AttachmentBuilder, ButtonStyle, ComponentType, Events, MessageFlags,
  type APIActionRowComponent, type APIButtonComponentWithCustomId, type APIComponentInMessageActionRow, type ButtonInteraction, type ChatInputCommandInteraction, type Client, type Interaction, type RepliableInteraction,
} from 'discord.js';
import type { RunDocumentChange, SessionRecord } from '../../core/store.js';
import { mainPreview, runCommand, type CommandScope } from '../chat/command-runner.js';
import { helpText, type CommandVerb } from '../chat/commands.js';
import type { MemoryAction } from '../chat/memory-access.js';
import type { Reviewer } from '../../core/agent.js';
import { choiceText } from '../chat/memory-browser.js';
import { memoryDiffMarkdown, memoryRunDiffs, revertNoteLine } from '../chat/notes.js';
import { interactionRequester, refuseInteraction } from './access.js';
import { accessRequest } from './memory-access.js';
import { enqueueText, servedHere, type DiscordContext } from './context.js';
import type { ChatInteractions } from '../chat/chat-adapter.js';
import { outboxPayload } from './deliver.js';
import { buttonId, parseButtonId, type ButtonId } from './ids.js';
import { addressOf } from './place.js';
import { decideFromButton, isApprovalButton } from './approval-interactions.js';
import { discordMessageLimit, memoryNoteComponents, type NoteState } from './message-views.js';
import { documentMenus } from './memory-views.js';
import { DiscordMemoryInteractions, memoryReviewActions } from './memory-interactions.js';
import { slashCommandName, textOption, verbOf, verbOption } from './slash-command.js';

/** Verbs whose answer everyone in the thread should see. */
const publicVerbs: ReadonlySet<CommandVerb> = new Set(['pause', 'resume', 'stop', 'reset', 'budget']);
/** Memory verbs answered to the asker first (a refusal stays private), then told in the thread. */
const toldVerbs: ReadonlySet<CommandVerb> = new Set(['revert', 'remember', 'forget', 'pin']);
/** Which memory access each note button needs (pause / resume / stop need none). */
const noteAccess: Partial<Record<ButtonId['action'], MemoryAction>> = { view: 'view', memory: 'view', review: 'view', keep: 'view', revert: 'revert', undo: 'revert' };

/** Handles interactionCreate. */
export class DiscordInteractions implements ChatInteractions<Client> {
  private readonly review: DiscordMemoryInteractions;

  constructor(private readonly context: DiscordContext) {
    this.review = new DiscordMemoryInteractions(context);
  }

  /** Listens to interactionCreate; in a server Hippo does not work in, it only says so. */
  register(client: Client): void {
    client.on(Events.InteractionCreate, (interaction) => {
      const handled = servedHere(this.context, interaction.guildId) ? this.handle(interaction) : notServedHere(interaction);
      handled.catch((error: unknown) => this.context.log.error({ err: error, interactionId: interaction.id }, 'discord-interaction-failed'));
    });
  }

  /** Routes `/hippo`, Hippo's buttons, menus and modals; other interactions are not Hippo's. */
  async handle(interaction: Interaction): Promise<void> {
    if (interaction.isChatInputCommand() && interaction.commandName === slashCommandName) return this.slash(interaction);
    if (!interaction.isButton() && !interaction.isStringSelectMenu() && !interaction.isModalSubmit()) return;
    const id = parseButtonId(interaction.customId);
    if (!id) return;
    if (memoryReviewActions.has(id.action)) {
      // Menus and forms of the memory browser act on a session's memory: "steer" in the access rules.
      const decision = await this.context.access.maySteer(interactionRequester(interaction));
      if (!decision.allowed) return refuseInteraction(this.context, interaction, decision);
      if (!(await this.firstDelivery(interaction))) return;
      const session = await this.context.stores.sessions.get(id.sessionId);
      if (!session) return void (await interaction.reply({ content: 'This Hippo session no longer exists.', flags: MessageFlags.Ephemeral }));
      return this.review.handle(interaction, id, session);
    }
    if (interaction.isButton()) return this.button(interaction, id);
  }

  private async slash(interaction: ChatInputCommandInteraction): Promise<void> {
    const verb = verbOf(interaction.options.getString(verbOption)) ?? 'help';
    const rest = (interaction.options.getString(textOption) ?? '').trim();
    const address = await addressOf(this.context.client, interaction.channelId, interaction.channel);
    const session = address ? await this.context.agent.findSession(address) : null;
    // Checked before anything is recorded: a refusal stores nothing.
    if (session) {
      const decision = await this.context.access.mayCommand(verb, interactionRequester(interaction), session);
      if (!decision.allowed) return refuseInteraction(this.context, interaction, decision);
    }
    if (!(await this.firstDelivery(interaction))) return;
    await interaction.deferReply(publicVerbs.has(verb) ? {} : { flags: MessageFlags.Ephemeral });
    if (!session) {
      const text = verb === 'help' ? helpText('/hippo') : 'There is no Hippo session here. Mention me with a request to start one, then use `/hippo` in its thread.';
      return replyText(interaction, text, 'hippo.md');
    }
    const reply = await runCommand(verb, this.scope(interaction, session), rest);
    if (reply.file) {
      await interaction.editReply({ content: reply.text, files: [new AttachmentBuilder(reply.file.data, { name: reply.file.name })], allowedMentions: { parse: [] } });
      return;
    }
    if (verb === 'memory' && !reply.private) return this.browser(interaction, session, reply.text);
    // Everyone in the thread hears of a memory change; the asker got their answer privately first.
    if (toldVerbs.has(verb) && !reply.private) await enqueueText(this.context, { key: `discord:command:${interaction.id}`, sessionId: session.id, channelId: session.threadKey }, `${reply.text}\n— ${actorName(interaction)}`);
    return replyText(interaction, reply.text, `hippo-${verb}.md`);
  }

  /** The memory browser as an ephemeral answer: the list, and menus to choose a document. */
  private async browser(interaction: RepliableInteraction, session: SessionRecord, text: string): Promise<void> {
    const { rows, left } = documentMenus(session.id, await this.context.stores.documents.spaceDocuments(session.memorySpaceId));
    const more = left > 0 ? `\n(${left} more documents are not in the menus; they are listed above.)` : '';
    return replyText(interaction, `${text}${more}`, 'memory.md', rows);
  }

  private async button(interaction: ButtonInteraction, id: ButtonId): Promise<void> {
    // Every Hippo button acts on a session or its memory: "steer" in the access rules; Stop is the
    // starter's (or an admin's), like the stop command.
    const found = await this.context.stores.sessions.get(id.sessionId);
    const decision = id.action === 'stop' && found
      ? await this.context.access.mayCommand('stop', interactionRequester(interaction), found)
      : await this.context.access.maySteer(interactionRequester(interaction));
    if (!decision.allowed) return refuseInteraction(this.context, interaction, decision);
    if (!(await this.firstDelivery(interaction))) return;
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    const session = found;
    if (!session) return replyText(interaction, 'This Hippo session no longer exists.', 'hippo.md');
    const scope = this.scope(interaction, session);
    if (isApprovalButton(id.action)) return replyText(interaction, await decideFromButton(this.context, interactionRequester(interaction), scope.actor, session, id), 'hippo.md');
    const needed = noteAccess[id.action];
    if (needed) {
      const decision = await scope.access(needed);
      if (!decision.allowed) {
        this.context.log.info({ userId: interaction.user.id, action: id.action }, 'discord-memory-refused');
        return replyText(interaction, decision.reason, 'hippo.md');
      }
    }
    switch (id.action) {
      case 'pause':
      case 'resume':
      case 'stop':
        return replyText(interaction, (await runCommand(id.action, scope)).text, 'hippo.md');
      case 'memory':
        return replyText(interaction, await mainPreview(this.context.stores, session), 'memory.md');
      case 'view':
        if (!id.memoryRunId) return;
        return replyText(interaction, memoryDiffMarkdown(await memoryRunDiffs(this.context.stores.documents, id.memoryRunId)), 'memory-change.md');
      case 'revert':
        if (!id.memoryRunId) return;
        return this.revert(interaction, session, id.memoryRunId, reviewerOf(scope));
      case 'undo':
        if (!id.memoryRunId || !id.document) return;
        return this.undoBoth(interaction, session, id.memoryRunId, id.document, reviewerOf(scope));
      case 'keep':
        return replyText(interaction, 'Nothing was changed: the later changes stay as they are.', 'hippo.md');
      case 'review':
        if (!id.memoryRunId) return;
        await this.context.agent.review.approve(session.memorySpaceId, id.memoryRunId, reviewerOf(scope), scope.actor.name);
        await this.editNote(session, id.memoryRunId, { reviewedBy: scope.actor.name }, interaction.id);
        return replyText(interaction, '👍 Thanks, marked as reviewed.', 'hippo.md');
      default:
        return replyText(interaction, 'This button no longer works.', 'hippo.md');
    }
  }

  /**
   * R13: restores what nobody changed since the memory change, says so in the thread and on the
   * note; documents changed again are shown to the clicker with "Undo both" / "Keep" buttons.
   */
  private async revert(interaction: ButtonInteraction, session: SessionRecord, memoryRunId: string, actor: Reviewer): Promise<void> {
    const result = await this.context.agent.review.revert(memoryRunId, actor);
    if (result.reverted.length > 0) await this.announceRevert(session, memoryRunId, actor.name, result.reverted, interaction.id);
    if (result.needsChoice.length > 0) {
      const all = await this.context.stores.documents.runChanges(memoryRunId);
      const intro = result.reverted.length > 0 ? `↩️ Reverted ${result.reverted.join(', ')}. The rest changed again since:\n` : '';
      return this.offerChoice(interaction, session, memoryRunId, all, result.needsChoice, intro);
    }
    if (result.reverted.length > 0) return replyText(interaction, `↩️ Reverted ${result.reverted.join(', ')}.`, 'hippo.md');
    return replyText(interaction, result.alreadyReverted.length > 0 ? 'This memory change was already reverted.' : 'This memory change touched no documents.', 'hippo.md');
  }

  /** The clicker chose to undo a document's change together with the later ones they were shown. */
  private async undoBoth(interaction: ButtonInteraction, session: SessionRecord, memoryRunId: string, document: { index: number; version: number }, actor: Reviewer): Promise<void> {
    const all = await this.context.stores.documents.runChanges(memoryRunId);
    const target = all[document.index];
    if (!target) return replyText(interaction, 'This memory change no longer exists.', 'hippo.md');
    const outcome = await this.context.agent.review.revertWithLaterChanges(memoryRunId, target.documentId, document.version, actor);
    switch (outcome.status) {
      case 'reverted':
        await this.announceRevert(session, memoryRunId, actor.name, [outcome.path], interaction.id);
        return replyText(interaction, `↩️ Reverted ${outcome.path}, with the later changes.`, 'hippo.md');
      case 'changed-again':
        return this.offerChoice(interaction, session, memoryRunId, all, [outcome.change], 'It changed again while you were looking:\n');
      case 'already-reverted':
        return replyText(interaction, `${outcome.path} was already reverted.`, 'hippo.md');
      case 'gone':
        return replyText(interaction, 'This memory change no longer exists.', 'hippo.md');
    }
  }

  /** An ephemeral reply: per document, what changed since, with "Undo both" and "Keep". */
  private async offerChoice(interaction: ButtonInteraction, session: SessionRecord, memoryRunId: string, all: RunDocumentChange[], choices: RunDocumentChange[], intro: string): Promise<void> {
    const text = `${intro}${choices.map(choiceText).join('\n')}`;
    // Discord allows 5 rows of buttons: more documents than that are chosen in a second round.
    const rows: Array<APIActionRowComponent<APIButtonComponentWithCustomId>> = choices.slice(0, 5).map((change) => {
      const document = { index: all.findIndex((candidate) => candidate.documentId === change.documentId), version: change.currentVersion };
      return {
        type: ComponentType.ActionRow,
        components: [
          { type: ComponentType.Button, style: ButtonStyle.Danger, custom_id: buttonId('undo', session.id, memoryRunId, document), label: `Undo both: ${change.path}`.slice(0, 80) },
          { type: ComponentType.Button, style: ButtonStyle.Secondary, custom_id: buttonId('keep', session.id, memoryRunId, document), label: 'Keep' },
        ],
      };
    });
    await interaction.editReply({ content: text.slice(0, discordMessageLimit), components: rows, allowedMentions: { parse: [] } });
  }

  /** Tells the thread who reverted what, and shows it on the note. */
  private async announceRevert(session: SessionRecord, memoryRunId: string, name: string, paths: string[], interactionId: string): Promise<void> {
    await enqueueText(this.context, { key: `discord:revert:${memoryRunId}:${paths.join(',')}`, sessionId: session.id, channelId: session.threadKey }, revertNoteLine(name, paths));
    await this.editNote(session, memoryRunId, { revertedBy: name }, interactionId);
  }

  /** Shows on the note who reverted or reviewed it. */
  private async editNote(session: SessionRecord, memoryRunId: string, state: NoteState, interactionId: string): Promise<void> {
    const noteKey = `discord:memory:${memoryRunId}`;
    await this.context.outbox.enqueue({
      idempotencyKey: `${noteKey}:i${interactionId}`,
      sessionId: session.id,
      platform: 'discord',
      operation: 'update',
      targetKey: noteKey,
      replacesPending: true,
      payload: outboxPayload({ channelId: session.threadKey, body: { components: memoryNoteComponents(session.id, memoryRunId, state) } }),
    });
  }

  /** False for a replayed interaction (gateway resume): it was handled already. */
  private firstDelivery(interaction: Interaction): Promise<boolean> {
    return this.context.stores.events.markProcessed(`discord:interaction:${interaction.id}`);
  }

  private scope(interaction: Interaction, session: SessionRecord): CommandScope {
    return {
      agent: this.context.agent,
      stores: this.context.stores,
      session,
      actor: { userId: interaction.user.id, name: actorName(interaction) },
      prefix: '/hippo',
      access: async (action) => {
        const space = await this.context.stores.spaces.get(session.memorySpaceId);
        if (!space) return { allowed: false, reason: 'This memory space no longer exists.' };
        return this.context.memory.check(space, action, await accessRequest(this.context, interaction));
      },
    };
  }
}

/** The scope's asker as a reviewer acting from the session's thread. */
function reviewerOf(scope: CommandScope): Reviewer {
  return { userId: scope.actor.userId, name: scope.actor.name, sessionId: scope.session.id };
}

/** The clicker's name as the server shows it. */
function actorName(interaction: Interaction): string {
  const member = interaction.member;
  if (member && 'displayName' in member) return member.displayName;
  return member?.nick ?? interaction.user.displayName;
}

/** Answers a deferred interaction; text over Discord's limit goes in an attached Markdown file. */
async function replyText(interaction: RepliableInteraction, text: string, fileName: string, components: Array<APIActionRowComponent<APIComponentInMessageActionRow>> = []): Promise<void> {
  const rows = components.length > 0 ? { components } : {};
  if (text.length <= discordMessageLimit) {
    await interaction.editReply({ content: text, allowedMentions: { parse: [] }, ...rows });
    return;
  }
  const file = new AttachmentBuilder(Buffer.from(text, 'utf8'), { name: fileName });
  await interaction.editReply({ content: `📎 The full text (${text.length.toLocaleString('en-US')} characters) is attached.`, files: [file], allowedMentions: { parse: [] }, ...rows });
}

/** A command or click in a server Hippo does not work in: a private word, nothing else. */
async function notServedHere(interaction: Interaction): Promise<void> {
  if (interaction.isRepliable()) await interaction.reply({ content: 'Hippo is not available in this server.', flags: MessageFlags.Ephemeral });
}
