// The /hippo slash command: the same verbs as a mention, answered only to the person who typed it.
// Slack does not say which thread a slash command was typed in (thread_ts is absent from most
// payloads), so the command uses the thread's session when Slack names the thread, falls back to
// the channel's most recent session for the read-only `status` and `memory`, and otherwise asks
// people to mention @hippo in the thread instead.
import type { App } from '@slack/bolt';
import type { SessionRecord } from '../../core/store.js';
import { runCommand } from '../chat/command-runner.js';
import { helpText, parseCommand, type CommandVerb } from '../chat/commands.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { slashCommandBody } from './payloads.js';
import { slackThread, type SlackContext } from './slack-context.js';

const slashPrefix = '/hippo';
/** Verbs that only read, so the channel's latest session is an acceptable stand-in for "this thread". */
const readOnlyVerbs: ReadonlySet<CommandVerb> = new Set(['status', 'memory']);

/** Registers /hippo on the Bolt app. */
export function registerSlashCommand(app: App, context: SlackContext): void {
  app.command(slashPrefix, async ({ ack, body, respond }) => {
    // Without a response_url (a malformed or forged payload) there is nowhere to answer: the
    // acknowledgement itself says so.
    if (typeof respond !== 'function' || !slashCommandBody.safeParse(body).success) {
      await ack({ response_type: 'ephemeral', text: 'This command could not be read; try `/hippo help`.' });
      return;
    }
    await ack();
    context.background.run('slack-slash-command', async () => {
      const text = await answer(context, body);
      await respond({ response_type: 'ephemeral', text: markdownToMrkdwn(text) });
    });
  });
}

async function answer(context: SlackContext, raw: unknown): Promise<string> {
  const parsed = slashCommandBody.safeParse(raw);
  if (!parsed.success) return helpText(slashPrefix);
  const command = parsed.data;
  const words = parseCommand(command.text);
  if ('unknown' in words) return helpText(slashPrefix, words.unknown);
  if (words.verb === 'help') return helpText(slashPrefix);
  let session: SessionRecord | null = null;
  if (command.thread_ts) session = await context.agent.findSession(slackThread(command.team_id, command.channel_id, command.thread_ts));
  let note = '';
  if (!session && readOnlyVerbs.has(words.verb)) {
    session = await latestChannelSession(context, command.team_id, command.channel_id);
    if (session) note = `_(the most recent Hippo session in this channel: "${session.title}")_\n`;
  }
  if (!session) {
    return `Use this in a Hippo thread: Slack does not tell apps which thread a slash command came from, so mention me there instead (\`@hippo ${words.verb}\`).`;
  }
  const decision = await context.access.mayCommand(words.verb, context.people.requester(command.team_id, command.user_id), session);
  if (!decision.allowed) {
    context.log.info({ teamId: command.team_id, userId: command.user_id, verb: words.verb, rule: decision.rule }, 'slack-request-refused');
    return decision.message;
  }
  const actor = { userId: command.user_id, name: await context.people.name(command.team_id, command.user_id) };
  return note + (await runCommand(words.verb, { agent: context.agent, stores: context.stores, session, actor, prefix: slashPrefix, argument: words.rest }));
}

/** The channel's most recently started Slack session, or null. */
async function latestChannelSession(context: SlackContext, teamId: string, channelId: string): Promise<SessionRecord | null> {
  const row = await context.prisma.session.findFirst({
    where: { platform: 'slack', workspaceId: teamId, channelId },
    orderBy: { createdAt: 'desc' },
    select: { id: true },
  });
  return row ? context.stores.sessions.get(row.id) : null;
}
