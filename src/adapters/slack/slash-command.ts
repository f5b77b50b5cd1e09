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
import type { Json } from './message-views.js';
import { browserAnswer, slackCommandScope } from './command-scope.js';
import { slashCommandBody } from './payloads.js';
import { uploadFile } from './files.js';
import { sendFilePrivately } from './private-answer.js';
import { slackThread, workspaceOf, type SlackContext } from './context.js';

const slashPrefix = '/hippo';
/**
 * Verbs for which the channel's latest session is an acceptable stand-in for "this thread": they
 * only read, or act on the channel's memory space rather than on one thread's work.
 */
const channelVerbs: ReadonlySet<CommandVerb> = new Set(['status', 'memory', 'remember', 'forget', 'pin']);

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
      const { text, blocks } = await answer(context, body);
      await respond({ response_type: 'ephemeral', text: markdownToMrkdwn(text), ...(blocks ? { blocks } : {}) });
    });
  });
}

async function answer(context: SlackContext, raw: unknown): Promise<{ text: string; blocks?: Json[] }> {
  const parsed = slashCommandBody.safeParse(raw);
  if (!parsed.success) return { text: helpText(slashPrefix) };
  const command = parsed.data;
  const words = parseCommand(command.text);
  if ('unknown' in words) return { text: helpText(slashPrefix, words.unknown) };
  if (words.verb === 'help') return { text: helpText(slashPrefix) };
  let session: SessionRecord | null = null;
  if (command.thread_ts) session = await context.agent.findSession(slackThread(command.team_id, command.channel_id, command.thread_ts));
  let note = '';
  if (!session && channelVerbs.has(words.verb)) {
    session = await latestChannelSession(context, command.team_id, command.channel_id);
    if (session) note = `_(the most recent Hippo session in this channel: "${session.title}")_\n`;
  }
  if (!session) {
    return { text: `Use this in a Hippo thread: Slack does not tell apps which thread a slash command came from, so mention me there instead (\`@hippo ${words.verb}\`).` };
  }
  const decision = await context.access.mayCommand(words.verb, context.people.requester(command.team_id, command.user_id), session);
  if (!decision.allowed) {
    context.log.info({ teamId: command.team_id, userId: command.user_id, verb: words.verb, rule: decision.rule }, 'slack-request-refused');
    return { text: decision.message };
  }
  const asker = { teamId: command.team_id, userId: command.user_id, name: await context.people.name(command.team_id, command.user_id), channelId: command.channel_id };
  const reply = await runCommand(words.verb, slackCommandScope(context, session, asker, slashPrefix), words.rest);
  if (reply.file && reply.private) return { text: note + (await sendFilePrivately(context, command.team_id, command.user_id, { ...reply, file: reply.file })) };
  if (reply.file) {
    // A slash command's answer carries no file: the zip goes to the session's thread.
    await uploadFile((await workspaceOf(context, command.team_id)).client, { channel: session.channelId, threadTs: session.threadKey }, reply.file.name, reply.file.data);
    return { text: `${note}${reply.text} The zip is in the session's thread.` };
  }
  const browser = await browserAnswer(context, words.verb, reply, session, { c: command.channel_id, t: command.thread_ts ?? null });
  return browser ? { text: note + browser.text, blocks: browser.blocks } : { text: note + reply.text };
}

/** The channel's most recently started Slack session, or null. */
async function latestChannelSession(context: SlackContext, teamId: string, channelId: string): Promise<SessionRecord | null> {
  return context.stores.sessions.latestInChannel({ platform: 'slack', workspaceId: teamId, channelId });
}
