// A command's answer that only its asker may see, when it carries a file (a memory export asked
// for where guests or Slack Connect members read along): the file goes to the person's messages
// with Hippo, and what is said in the channel (ephemerally) says where it went.
import { z } from 'zod';
import type { CommandReply } from '../chat/command-runner.js';
import { markdownToMrkdwn } from '../chat/markdown-to-mrkdwn.js';
import { workspaceOf, type SlackContext } from './context.js';
import { uploadFile } from './files.js';

const postedMessage = z.looseObject({ channel: z.string() });

/** Why an answer went privately, said to the asker. */
export const privateAnswerReason = "people outside the workspace's full members (guests, other organisations) can read this channel";

/** Sends the reply's file to `userId`'s messages with Hippo; returns the words for the asker. */
export async function sendFilePrivately(context: Pick<SlackContext, 'workspaces'>, teamId: string, userId: string, reply: CommandReply & { file: NonNullable<CommandReply['file']> }): Promise<string> {
  const { client } = await workspaceOf(context, teamId);
  // A user id as the channel posts into the app's direct messages with them; the answer names
  // that conversation, which the upload needs.
  const posted = postedMessage.parse(await client.apiCall('chat.postMessage', { channel: userId, text: markdownToMrkdwn(reply.text) }));
  await uploadFile(client, { channel: posted.channel }, reply.file.name, reply.file.data);
  return `${reply.text} I sent the zip to your messages with Hippo, not here: ${privateAnswerReason}.`;
}
