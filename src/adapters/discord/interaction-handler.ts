// Buttons and the slash command. Every interaction is acknowledged first (deferReply: Discord
// wants an answer within 3 s) and then answered by editing that reply: ephemeral for what only the
// clicker needs (status, diffs, confirmations), public for commands that change the session.
// Long answers become an attached .md file. Each interaction is handled once (event log).
import { AttachmentBuilder, MessageFlags, type ButtonInteraction, type ChatInputCommandInteraction, type Interaction, type RepliableInteraction } from 'discord.js';
import type { SessionRecord } from '../../core/store.js';
import { runCommand, type CommandScope } from '../chat/command-runner.js';
import { helpText, type CommandVerb } from '../chat/commands.js';
import { revertMemoryRun } from '../chat/memory-actions.js';
import { memoryDiffMarkdown, memoryRunDiffs, revertNoteLine } from '../chat/notes.js';
import { enqueueText, type DiscordContext } from './discord-context.js';
import { outboxPayload } from './discord-deliver.js';
import { parseButtonId, type ButtonId } from './discord-ids.js';
import { addressOf } from './discord-place.js';
import { discordMessageLimit, memoryNoteComponents, type NoteState } from './discord-render.js';
import { slashCommandName, verbOf, verbOption } from './slash-command.js';

/** Verbs whose answer everyone in the thread should see. */
const publicVerbs: ReadonlySet<CommandVerb> = new Set(['pause', 'resume', 'reset', 'revert', 'forget']);

/** Handles interactionCreate. */
export class DiscordInteractionHandler {
  constructor(private readonly context: DiscordContext) {}

  /** Routes `/hippo` and Hippo's buttons; other interactions are not Hippo's. */
  async handle(interaction: Interaction): Promise<void> {
    if (interaction.isChatInputCommand() && interaction.commandName === slashCommandName) return this.slash(interaction);
    if (!interaction.isButton()) return;
    const id = parseButtonId(interaction.customId);
    if (id) return this.button(interaction, id);
  }

  private async slash(interaction: ChatInputCommandInteraction): Promise<void> {
    const verb = verbOf(interaction.options.getString(verbOption)) ?? 'help';
    if (!(await this.firstDelivery(interaction))) return;
    await interaction.deferReply(publicVerbs.has(verb) ? {} : { flags: MessageFlags.Ephemeral });
    const address = await addressOf(this.context.client, interaction.channelId, interaction.channel);
    const session = address ? await this.context.agent.findSession(address) : null;
    if (!session) {
      const text = verb === 'help' ? helpText('/hippo') : 'There is no Hippo session here. Mention me with a request to start one, then use `/hippo` in its thread.';
      return replyText(interaction, text, 'hippo.md');
    }
    return replyText(interaction, await runCommand(verb, this.scope(interaction, session)), `hippo-${verb}.md`);
  }

  private async button(interaction: ButtonInteraction, id: ButtonId): Promise<void> {
    if (!(await this.firstDelivery(interaction))) return;
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    const session = await this.context.stores.sessions.get(id.sessionId);
    if (!session) return replyText(interaction, 'This Hippo session no longer exists.', 'hippo.md');
    const scope = this.scope(interaction, session);
    switch (id.action) {
      case 'pause':
      case 'resume':
        return replyText(interaction, await runCommand(id.action, scope), 'hippo.md');
      case 'memory':
        return replyText(interaction, await runCommand('memory', scope), 'memory.md');
      case 'view':
        if (!id.memoryRunId) return;
        return replyText(interaction, memoryDiffMarkdown(await memoryRunDiffs(this.context.stores.documents, id.memoryRunId)), 'memory-change.md');
      case 'revert':
        if (!id.memoryRunId) return;
        return this.revert(interaction, session, id.memoryRunId, scope.actor);
      case 'review':
        if (!id.memoryRunId) return;
        await this.context.stores.documents.markReviewed(id.memoryRunId, scope.actor.name);
        await this.editNote(session, id.memoryRunId, { reviewedBy: scope.actor.name }, interaction.id);
        return replyText(interaction, '👍 Thanks, marked as reviewed.', 'hippo.md');
    }
  }

  /** Restores the documents a memory run changed, says so in the thread and on the note. */
  private async revert(interaction: ButtonInteraction, session: SessionRecord, memoryRunId: string, actor: CommandScope['actor']): Promise<void> {
    const outcome = await revertMemoryRun(this.context.stores, memoryRunId, { kind: 'person', ...actor });
    if (outcome.status === 'already-reverted') return replyText(interaction, 'This memory change was already reverted.', 'hippo.md');
    if (outcome.status === 'nothing-to-revert') return replyText(interaction, 'This memory change touched no documents.', 'hippo.md');
    await enqueueText(this.context, { key: `discord:revert:${memoryRunId}`, sessionId: session.id, channelId: session.threadKey }, revertNoteLine(actor.name, outcome.paths));
    await this.editNote(session, memoryRunId, { revertedBy: actor.name }, interaction.id);
    return replyText(interaction, `↩️ Reverted ${outcome.paths.join(', ')}.`, 'hippo.md');
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
    };
  }
}

/** The clicker's name as the server shows it. */
function actorName(interaction: Interaction): string {
  const member = interaction.member;
  if (member && 'displayName' in member) return member.displayName;
  return member?.nick ?? interaction.user.displayName;
}

/** Answers a deferred interaction; text over Discord's limit goes in an attached Markdown file. */
async function replyText(interaction: RepliableInteraction, text: string, fileName: string): Promise<void> {
  if (text.length <= discordMessageLimit) {
    await interaction.editReply({ content: text, allowedMentions: { parse: [] } });
    return;
  }
  const file = new AttachmentBuilder(Buffer.from(text, 'utf8'), { name: fileName });
  await interaction.editReply({ content: `📎 The full text (${text.length.toLocaleString('en-US')} characters) is attached.`, files: [file], allowedMentions: { parse: [] } });
}
