// The `/hippo <verb>` slash command: its definition (one string option with a choice per command
// verb) and its registration at start-up, per guild in DISCORD_GUILD_IDS (instant) or globally.
import {
  ApplicationCommandOptionType, ApplicationCommandType, ApplicationIntegrationType, InteractionContextType, Routes,
  type REST, type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import type { Logger } from '../../log.js';
import { commandDescriptions, commandVerbs, type CommandVerb } from '../chat/commands.js';

/** The slash command's name. */
export const slashCommandName = 'hippo';

/** The name of its verb option. */
export const verbOption = 'verb';

/** The name of its text option (what to remember, forget or pin; how much more for budget). */
export const textOption = 'text';

/** The command as Discord's REST API takes it. */
export function hippoCommand(): RESTPostAPIChatInputApplicationCommandsJSONBody {
  return {
    name: slashCommandName,
    type: ApplicationCommandType.ChatInput,
    description: 'Control Hippo in this thread: pause, stop, reset, status, memory, remember, budget, …',
    contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
    integration_types: [ApplicationIntegrationType.GuildInstall],
    options: [{
      type: ApplicationCommandOptionType.String,
      name: verbOption,
      description: 'What Hippo should do',
      required: true,
      choices: commandVerbs.map((verb) => ({ name: `${verb} – ${commandDescriptions[verb]}`.slice(0, 100), value: verb })),
    }, {
      type: ApplicationCommandOptionType.String,
      name: textOption,
      description: 'remember, forget, pin: the fact or the line; search: the words; budget: US dollars more',
      required: false,
      max_length: 1_000,
    }],
  };
}

/** The verb of an option value, or null when it is not one (an outdated command definition). */
export function verbOf(value: string | null): CommandVerb | null {
  return commandVerbs.find((verb) => verb === value) ?? null;
}

/** Guild ids from DISCORD_GUILD_IDS ("1, 2,3"); empty when unset. */
export function parseGuildIds(value: string | undefined): string[] {
  return (value ?? '').split(',').map((id) => id.trim()).filter((id) => id !== '');
}

/** Registers (overwrites) Hippo's commands; a guild that refuses is logged and skipped. */
export async function registerSlashCommands(rest: REST, applicationId: string, guildIds: string[], log: Logger): Promise<void> {
  const body = [hippoCommand()];
  if (guildIds.length === 0) {
    await rest.put(Routes.applicationCommands(applicationId), { body });
    log.info({ scope: 'global' }, 'discord-commands-registered');
    return;
  }
  for (const guildId of guildIds) {
    try {
      await rest.put(Routes.applicationGuildCommands(applicationId, guildId), { body });
      log.info({ guildId }, 'discord-commands-registered');
    } catch (error) {
      // Usually the bot was invited without the applications.commands scope.
      log.warn({ guildId, err: error instanceof Error ? error.message : String(error) }, 'discord-commands-refused: re-invite the bot with the applications.commands scope');
    }
  }
}
