// 📦 Export on a memory space in App Home (docs/product.md "Review memory"): the space's documents as
// Markdown with front matter and their whole history, as a zip (the same file as `memory export`),
// sent to the person in their direct messages with Hippo (its Messages tab) through Slack's external
// upload. A modal opens at once (the click's trigger lasts 3 seconds) and then says where the file
// went, or why it could not be sent. Only people who may view the space get it.
import { z } from 'zod';
import type { MemorySpaceRecord } from '../../../core/store.js';
import { emptyExportText, exportKey, memoryExportFile, oneExportAtATime } from '../../chat/memory-export.js';
import { homeSpace, spaceName } from './app-home.js';
import { slackPlatform, workspaceOf, type SlackContext } from '../context.js';
import { uploadFile } from '../files.js';
import { section } from '../message-views.js';
import { outcomeModal, type ModalView } from '../modals.js';
import type { BlockActionBody } from '../payloads.js';

const openedView = z.looseObject({ view: z.looseObject({ id: z.string() }) });
const postedMessage = z.looseObject({ channel: z.string() });
const title = 'Memory export';

/** 📦 Export clicked in App Home: sends the space's zip to the person, saying so in a modal. */
export async function exportFromHome(context: SlackContext, click: BlockActionBody, teamId: string, spaceId: string): Promise<void> {
  if (!click.trigger_id) return;
  const userId = click.user.id;
  const { client } = await workspaceOf(context, teamId);
  const space = await homeSpace(context, teamId, userId, spaceId);
  if (typeof space === 'string') {
    await client.apiCall('views.open', { trigger_id: click.trigger_id, view: outcomeModal(space, title) });
    return;
  }
  // One export at a time per person and space, here and by the `memory export` command alike.
  const ran = await oneExportAtATime(exportKey(slackPlatform, userId, space.id), async () => {
    const opened = openedView.parse(await client.apiCall('views.open', { trigger_id: click.trigger_id, view: exportModal(`📦 Preparing the memory of ${spaceName(space)}: its documents and their history, as a zip…`) }));
    const outcome = await sendExport(context, teamId, userId, space).catch((error: unknown) => {
      context.log.error({ err: error, userId, spaceId: space.id }, 'slack-home-export-failed');
      return 'The export could not be sent (Slack refused the upload, or the database is unreachable); nothing was shared. Try again in a moment.';
    });
    await client.apiCall('views.update', { view_id: opened.view.id, view: exportModal(outcome) });
    return true;
  });
  if (!ran) await client.apiCall('views.open', { trigger_id: click.trigger_id, view: outcomeModal('An export of this memory is already on its way to your messages with Hippo.', title) });
}

/** Builds the zip and sends it to the person's messages with Hippo; returns what the modal says. */
async function sendExport(context: SlackContext, teamId: string, userId: string, space: MemorySpaceRecord): Promise<string> {
  const file = await memoryExportFile(context.stores.documents, space.id);
  if (!file) return emptyExportText;
  const { client } = await workspaceOf(context, teamId);
  // A user id as the channel posts into the app's direct messages with them (chat:write alone);
  // the answer names that conversation, which the upload needs (it refuses a user id).
  const posted = postedMessage.parse(await client.apiCall('chat.postMessage', { channel: userId, text: `📦 The memory of ${spaceName(space)}: ${file.summary}` }));
  await uploadFile(client, { channel: posted.channel }, file.name, file.data);
  context.log.info({ userId, spaceId: space.id, bytes: file.data.length }, 'slack-home-exported');
  return `📦 Sent to your messages with Hippo (its *Messages* tab): *${file.name}*, the memory of ${spaceName(space)}: ${file.summary}`;
}

/** The export modal with one line (mrkdwn: channel names render). */
function exportModal(text: string): ModalView {
  return { type: 'modal', title: { type: 'plain_text', text: title }, close: { type: 'plain_text', text: 'Close' }, blocks: [section(text)] };
}
