// Hippo's buttons: Pause / Resume on the status card, View / Revert / 👍 on memory notes, View on
// reset notes, and the page buttons inside modals. Each click is acknowledged first; the work runs
// right after (views.open must still happen within the trigger's 3 seconds, so it comes first).
import type { App } from '@slack/bolt';
import { z } from 'zod';
import { revertMemoryRun, revertWithLaterChanges } from '../chat/memory-actions.js';
import { memoryRunDiffs, revertNoteLine } from '../chat/notes.js';
import { actionIds, type ResetViewRef } from './blocks.js';
import { memoryChangeModal, outcomeModal, resetModal, revertChoiceModal, type PageRef, type ThreadRef, type UndoBothRef } from './modals.js';
import { blockActionBody, type BlockActionBody } from './payloads.js';
import { slackPlatform, slackThread, type SlackContext } from './slack-context.js';

const resetViewRef = z.object({
  sessionId: z.string(), segmentOrdinal: z.number(), carriedMessages: z.number(), tokensBefore: z.number(), tokensAfter: z.number(),
  mainDocumentId: z.string().nullable(), mainVersion: z.number().nullable(),
});
const pageRef = z.object({ kind: z.enum(['memory', 'reset']), ref: z.string(), page: z.number().int().min(0) });
const undoBothRef: z.ZodType<UndoBothRef> = z.object({ r: z.string(), d: z.string(), v: z.number().int() });
const threadRef: z.ZodType<ThreadRef> = z.object({ channelId: z.string(), threadTs: z.string() });

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
    case actionIds.resume:
    case actionIds.stop: {
      const session = await context.stores.sessions.get(value);
      if (!session || session.platform !== 'slack' || session.workspaceId !== teamId) return;
      if (actionId === actionIds.pause) await context.agent.pause(session.id);
      else if (actionId === actionIds.stop) await context.agent.stopRun(session.id, await context.people.name(teamId, click.user.id));
      else await context.agent.resume(session.id);
      context.log.info({ sessionId: session.id, userId: click.user.id, action: actionId }, 'slack-run-control');
      return;
    }
    case actionIds.memoryView:
      return openView(context, click, memoryChangeModal(value, await memoryRunDiffs(context.stores.documents, value), 0));
    case actionIds.resetView: {
      const ref = parseValue(resetViewRef, value);
      if (!ref) return staleButton(context, click, actionId);
      return openView(context, click, resetModal(ref, await mainAt(context, ref), 0));
    }
    case actionIds.memoryRevert:
      return revert(context, click, teamId, value);
    case actionIds.memoryUndoBoth: {
      const ref = parseValue(undoBothRef, value);
      return ref ? undoBoth(context, click, teamId, ref) : staleButton(context, click, actionId);
    }
    case actionIds.memoryKeep:
      return updateView(context, click, outcomeModal('Nothing was changed: the later changes stay as they are.'));
    case actionIds.memoryAck: {
      await context.stores.documents.markReviewed(value, click.user.id);
      const name = await context.people.name(teamId, click.user.id);
      await ephemeral(context, click, `👍 Thanks, ${name}: this memory change is marked as reviewed.`);
      return;
    }
    default:
      if (actionId.startsWith(actionIds.viewPage)) {
        const ref = parseValue(pageRef, value);
        return ref ? turnPage(context, click, ref) : staleButton(context, click, actionId);
      }
      context.log.debug({ actionId }, 'slack-action-unknown');
  }
}

/**
 * R13: restores what nobody changed since the memory change; documents changed again are shown in
 * a modal where the person chooses (undo both, or keep). views.open comes right after the revert's
 * few statements, well within the trigger's 3 seconds.
 */
async function revert(context: SlackContext, click: BlockActionBody, teamId: string, memoryRunId: string): Promise<void> {
  const name = await context.people.name(teamId, click.user.id);
  const result = await revertMemoryRun(context.stores.documents, memoryRunId, { kind: 'person', userId: click.user.id, name });
  const thread = threadOf(click);
  if (result.needsChoice.length > 0 && thread) {
    const intro = result.reverted.length > 0 ? `Reverted ${result.reverted.join(', ')}. The rest changed again since:` : undefined;
    await openView(context, click, revertChoiceModal(memoryRunId, result.needsChoice, thread, intro));
  }
  if (result.reverted.length > 0 && thread) await announceRevert(context, teamId, thread, memoryRunId, name, result.reverted);
  if (result.reverted.length === 0 && result.needsChoice.length === 0) {
    await ephemeral(context, click, result.alreadyReverted.length > 0 ? 'This memory change was already reverted.' : 'This memory change wrote no documents.');
  }
}

/** The person chose to undo a document's change together with the later ones they were shown. */
async function undoBoth(context: SlackContext, click: BlockActionBody, teamId: string, ref: UndoBothRef): Promise<void> {
  const name = await context.people.name(teamId, click.user.id);
  const outcome = await revertWithLaterChanges(context.stores.documents, ref.r, ref.d, ref.v, { kind: 'person', userId: click.user.id, name });
  const thread = click.view?.private_metadata ? parseValue(threadRef, click.view.private_metadata) : null;
  switch (outcome.status) {
    case 'reverted':
      await updateView(context, click, outcomeModal(`↩️ Reverted ${outcome.path}, with the later changes.`));
      if (thread) await announceRevert(context, teamId, thread, ref.r, name, [outcome.path]);
      return;
    case 'changed-again':
      if (!thread) return;
      return updateView(context, click, revertChoiceModal(ref.r, [outcome.change], thread, 'It changed again while you were looking:'));
    case 'already-reverted':
      return updateView(context, click, outcomeModal(`${outcome.path} was already reverted.`));
    case 'gone':
      return updateView(context, click, outcomeModal('This memory change no longer exists.'));
  }
}

/** Tells the thread who reverted what (once per run and set of documents). */
async function announceRevert(context: SlackContext, teamId: string, thread: ThreadRef, memoryRunId: string, name: string, paths: string[]): Promise<void> {
  const session = await context.agent.findSession(slackThread(teamId, thread.channelId, thread.threadTs));
  await context.outbox.enqueue({
    idempotencyKey: `revert-note:${memoryRunId}:${paths.join(',')}`,
    sessionId: session?.id ?? null,
    platform: slackPlatform,
    operation: 'post',
    payload: { channel: thread.channelId, thread_ts: thread.threadTs, markdown: revertNoteLine(name, paths) },
  });
}

/**
 * A button value is ours (JSON we wrote), but a payload can be forged or outlive a format change:
 * anything that does not parse is a stale button, never an exception.
 */
function parseValue<T>(schema: z.ZodType<T>, value: string): T | null {
  try {
    const parsed = schema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Says so when a button's value cannot be read (forged, or made by an older version). */
async function staleButton(context: SlackContext, click: BlockActionBody, actionId: string): Promise<void> {
  context.log.warn({ actionId, userId: click.user.id }, 'slack-action-value-invalid');
  await ephemeral(context, click, 'This button no longer works: open the note again, or mention @hippo in the thread.');
}

async function updateView(context: SlackContext, click: BlockActionBody, view: unknown): Promise<void> {
  if (!click.view) return;
  await context.client.apiCall('views.update', { view_id: click.view.id, view });
}

async function turnPage(context: SlackContext, click: BlockActionBody, ref: PageRef): Promise<void> {
  if (!click.view) return;
  const view = ref.kind === 'memory'
    ? memoryChangeModal(ref.ref, await memoryRunDiffs(context.stores.documents, ref.ref), ref.page)
    : await (async () => {
        const reset = parseValue(resetViewRef, ref.ref);
        return reset ? resetModal(reset, await mainAt(context, reset), ref.page) : outcomeModal('This page can no longer be shown.');
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
