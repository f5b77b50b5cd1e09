// Hippo's buttons: Pause / Resume on the status card, View / Revert / 👍 on memory notes, View on
// reset notes, and the page buttons inside modals. Each click is acknowledged first; the work runs
// right after (views.open must still happen within the trigger's 3 seconds, so it comes first).
import type { App } from '@slack/bolt';
import { z } from 'zod';
import { revertMemoryRun } from '../chat/memory-actions.js';
import { memoryRunDiffs, revertNoteLine } from '../chat/notes.js';
import { actionIds, type ResetViewRef } from './blocks.js';
import { memoryChangeModal, resetModal, type PageRef } from './modals.js';
import { blockActionBody, type BlockActionBody } from './payloads.js';
import { slackPlatform, slackThread, type SlackContext } from './slack-context.js';

const resetViewRef = z.object({
  sessionId: z.string(), segmentOrdinal: z.number(), carriedMessages: z.number(), tokensBefore: z.number(), tokensAfter: z.number(),
  mainDocumentId: z.string().nullable(), mainVersion: z.number().nullable(),
});
const pageRef = z.object({ kind: z.enum(['memory', 'reset']), ref: z.string(), page: z.number().int().min(0) });

/** Registers the button handlers on the Bolt app. */
export function registerInteractions(app: App, context: SlackContext): void {
  app.action(/^hippo_/, async ({ ack, body }) => {
    await ack();
    const parsed = blockActionBody.safeParse(body);
    if (!parsed.success) return;
    const click = parsed.data;
    const action = click.actions[0];
    if (!action) return;
    context.background.run('slack-action', () => handleAction(context, click, action.action_id, action.value ?? ''), { action: action.action_id });
  });
}

async function handleAction(context: SlackContext, click: BlockActionBody, actionId: string, value: string): Promise<void> {
  const teamId = click.team?.id ?? click.user.team_id ?? context.identity.teamId;
  switch (actionId) {
    case actionIds.pause:
    case actionIds.resume: {
      const session = await context.stores.sessions.get(value);
      if (!session || session.platform !== 'slack' || session.workspaceId !== teamId) return;
      if (actionId === actionIds.pause) await context.agent.pause(session.id);
      else await context.agent.resume(session.id);
      context.log.info({ sessionId: session.id, userId: click.user.id, action: actionId }, 'slack-run-control');
      return;
    }
    case actionIds.memoryView:
      return openView(context, click, memoryChangeModal(value, await memoryRunDiffs(context.stores.documents, value), 0));
    case actionIds.resetView: {
      const ref = resetViewRef.parse(JSON.parse(value));
      return openView(context, click, resetModal(ref, await mainAt(context, ref), 0));
    }
    case actionIds.memoryRevert:
      return revert(context, click, teamId, value);
    case actionIds.memoryAck: {
      await context.stores.documents.markReviewed(value, click.user.id);
      const name = await context.people.name(teamId, click.user.id);
      await ephemeral(context, click, `👍 Thanks, ${name}: this memory change is marked as reviewed.`);
      return;
    }
    default:
      if (actionId.startsWith(actionIds.viewPage)) return turnPage(context, click, pageRef.parse(JSON.parse(value)));
      context.log.debug({ actionId }, 'slack-action-unknown');
  }
}

async function revert(context: SlackContext, click: BlockActionBody, teamId: string, memoryRunId: string): Promise<void> {
  const name = await context.people.name(teamId, click.user.id);
  const outcome = await revertMemoryRun(context.stores, memoryRunId, { kind: 'person', userId: click.user.id, name });
  if (outcome.status !== 'reverted') {
    await ephemeral(context, click, outcome.status === 'already-reverted' ? 'This memory change was already reverted.' : 'This memory change wrote no documents.');
    return;
  }
  const thread = threadOf(click);
  if (!thread) return;
  const session = await context.agent.findSession(slackThread(teamId, thread.channelId, thread.threadTs));
  await context.outbox.enqueue({
    idempotencyKey: `revert-note:${memoryRunId}`,
    sessionId: session?.id ?? null,
    platform: slackPlatform,
    operation: 'post',
    payload: { channel: thread.channelId, thread_ts: thread.threadTs, markdown: revertNoteLine(name, outcome.paths) },
  });
}

async function turnPage(context: SlackContext, click: BlockActionBody, ref: PageRef): Promise<void> {
  if (!click.view) return;
  const view = ref.kind === 'memory'
    ? memoryChangeModal(ref.ref, await memoryRunDiffs(context.stores.documents, ref.ref), ref.page)
    : await (async () => {
        const reset = resetViewRef.parse(JSON.parse(ref.ref));
        return resetModal(reset, await mainAt(context, reset), ref.page);
      })();
  await context.client.apiCall('views.update', { view_id: click.view.id, ...(click.view.hash ? { hash: click.view.hash } : {}), view });
}

/** MAIN.md's content at the version a reset read, or null. */
async function mainAt(context: SlackContext, ref: ResetViewRef): Promise<string | null> {
  if (!ref.mainDocumentId || ref.mainVersion === null) return null;
  const versions = await context.stores.documents.versions(ref.mainDocumentId);
  return versions.find((version) => version.version === ref.mainVersion)?.content ?? null;
}

async function openView(context: SlackContext, click: BlockActionBody, view: unknown): Promise<void> {
  if (!click.trigger_id) return;
  await context.client.apiCall('views.open', { trigger_id: click.trigger_id, view });
}

/** A reply only the clicking person sees, in the thread of the clicked message. */
async function ephemeral(context: SlackContext, click: BlockActionBody, text: string): Promise<void> {
  const thread = threadOf(click);
  if (!thread) return;
  await context.client.apiCall('chat.postEphemeral', { channel: thread.channelId, user: click.user.id, thread_ts: thread.threadTs, text });
}

function threadOf(click: BlockActionBody): { channelId: string; threadTs: string } | null {
  if (!click.channel || !click.message) return null;
  return { channelId: click.channel.id, threadTs: click.message.thread_ts ?? click.message.ts };
}
