// A command's scope in Slack (who asks, from which channel) and how its answer is delivered: a
// refusal only to the asker, `memory` as the browser with its ⋯ menus, anything else as Markdown.
import type { SessionRecord } from '../../core/store.js';
import type { CommandReply, CommandScope } from '../chat/command-runner.js';
import type { CommandVerb } from '../chat/commands.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import type { Json } from './message-views.js';
import { browserBlocks, type Origin } from './memory-views.js';
import type { SlackContext } from './context.js';

/** The scope of a command `userId` gave in `channelId` of team `teamId`. */
export function slackCommandScope(context: SlackContext, session: SessionRecord, asker: { teamId: string; userId: string; name: string; channelId: string }, prefix: string): CommandScope {
  return {
    agent: context.agent,
    stores: context.stores,
    session,
    actor: { userId: asker.userId, name: asker.name },
    prefix,
    access: async (action) => {
      const space = await context.stores.spaces.get(session.memorySpaceId);
      if (!space) return { allowed: false, reason: 'This memory space no longer exists.' };
      return context.memory.check(space, action, { platform: 'slack', workspaceId: asker.teamId, channelId: asker.channelId, userId: asker.userId });
    },
    answersPrivately: async () => {
      const space = await context.stores.spaces.get(session.memorySpaceId);
      return space === null || context.memory.answersPrivately(space, { workspaceId: asker.teamId, channelId: asker.channelId });
    },
  };
}

/** Block Kit for a command's answer, when it is the memory browser; null for a plain answer. */
export async function browserAnswer(context: SlackContext, verb: CommandVerb, reply: CommandReply, session: SessionRecord, origin: Origin): Promise<{ text: string; blocks: Json[] } | null> {
  if (verb !== 'memory' || reply.private) return null;
  const entries = await context.stores.documents.spaceDocuments(session.memorySpaceId);
  return { text: markdownToMrkdwn(reply.text).slice(0, 3_000), blocks: browserBlocks(session.memorySpaceId, entries, origin) };
}
