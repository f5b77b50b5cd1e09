// Hippo's buttons: Pause / Resume on the status card, View / Revert / 👍 on memory notes, View on
// reset notes, Search / Export in App Home, and the page buttons inside modals. Each click is
// acknowledged first; the work runs right after (views.open must still happen within the
// trigger's 3 seconds, so it comes first).
import type { FeedbackListener } from '../chat/answer-feedback.js';
import { feedbackActionId, recordFeedbackClick } from './feedback-buttons.js';
import { z } from 'zod';
import type { MemoryAction } from '../chat/memory-access.js';
import type { Reviewer } from '../../core/agent.js';
import { memoryRunDiffs, revertNoteLine } from '../chat/notes.js';
import { actionIds, type ResetViewRef } from './message-views.js';
import { memoryChangeModal, outcomeModal, resetModal, revertChoiceModal, type PageRef, type ThreadRef, type UndoBothRef } from './modals.js';
import { isMemoryAction, SlackMemoryInteractions } from './memory-interactions.js';
import { registerMemorySubmissions } from './memory-submissions.js';
import { blockActionBody, parseJsonValue, teamOfBody, type BlockActionBody } from './payloads.js';
import { postEphemeral } from './ephemeral.js';
import { homeActionIds, homeSpaceRef, isHomeAction } from './app-home/app-home.js';
import { handleApprovalAction } from './approval-interactions.js';
import { isApprovalAction } from './approval-views.js';
import { exportFromHome } from './app-home/app-home-export.js';
import { openHomeSearch, registerHomeSearch } from './app-home/app-home-search.js';
import { slackPlatform, slackThread, workspaceOf, type SlackContext } from './context.js';
import type { SlackListeners } from './routes.js';
import type { ChatInteractions } from '../chat/chat-adapter.js';

const resetViewRef = z.object({
  sessionId: z.string(), segmentOrdinal: z.number(), carriedMessages: z.number(), tokensBefore: z.number(), tokensAfter: z.number(),
  mainDocumentId: z.string().nullable(), mainVersion: z.number().nullable(),
});
const pageRef = z.object({ kind: z.enum(['memory', 'reset', 'document', 'history']), ref: z.string(), page: z.number().int().min(0) });
const undoBothRef: z.ZodType<UndoBothRef> = z.object({ r: z.string(), d: z.string(), v: z.number().int() });
const threadRef: z.ZodType<ThreadRef> = z.object({ channelId: z.string(), threadTs: z.string() });

/** Hippo's buttons and menus, the memory browser's modal submissions, and App Home's search. */
export class SlackInteractions implements ChatInteractions<SlackListeners> {
  constructor(
    private readonly context: SlackContext,
    /** Hears each new 👍 / 👎 clicked on an answer (the metrics counter). */
    private readonly onFeedback: FeedbackListener = () => undefined,
  ) {}

  /**
   * Registers the button handler and the memory browser's modal submissions. Other actions (a stale
   * or forged payload: Hippo's action ids all start with "hippo_") reach no listener; the app answers
   * them with an empty 200 (app.ts).
   */
  register({ app, routes }: SlackListeners): void {
    const { context, onFeedback } = this;
    app.action(/^hippo_/, async ({ ack, body }) => {
      await ack();
      const parsed = blockActionBody.safeParse(body);
      if (!parsed.success) return;
      const click = parsed.data;
      const action = click.actions[0];
      if (!action) return;
      // A button carries `value`; a ⋯ menu the chosen option's.
      const value = action.value ?? action.selected_option?.value ?? '';
      context.background.run('slack-action', () => handleAction(context, click, action.action_id, value, onFeedback), { action: action.action_id });
    });
    registerMemorySubmissions(routes, context);
    registerHomeSearch(routes, context);
  }
}

/** Which memory access each note button needs. */
const noteAccess: Record<string, MemoryAction> = {
  [actionIds.memoryView]: 'view', [actionIds.memoryAck]: 'view', [actionIds.resetView]: 'view',
  [actionIds.memoryRevert]: 'revert', [actionIds.memoryUndoBoth]: 'revert', [actionIds.memoryKeep]: 'view',
};

async function handleAction(context: SlackContext, click: BlockActionBody, actionId: string, value: string, onFeedback: FeedbackListener): Promise<void> {
  const teamId = teamOf(click);
  // Every Hippo button acts on a session or its memory: "steer" in the access rules.
  const decision = await context.access.maySteer(context.people.requester(teamId, click.user.id));
  if (!decision.allowed) {
    context.log.info({ teamId, userId: click.user.id, action: actionId, rule: decision.rule }, 'slack-request-refused');
    // App Home is no modal to update: the refusal opens one.
    if (click.view?.type === 'home') return openView(context, click, outcomeModal(decision.message, 'Hippo'));
    return click.view && !threadOf(click) ? updateView(context, click, outcomeModal(decision.message)) : ephemeral(context, click, decision.message);
  }
  if (actionId === feedbackActionId) return recordFeedbackClick(context, click, teamId, value, onFeedback);
  if (isHomeAction(actionId)) {
    const ref = parseJsonValue(homeSpaceRef, value);
    if (!ref) return openView(context, click, outcomeModal('This button no longer works: open the Home tab again.', 'Hippo'));
    return actionId === homeActionIds.search ? openHomeSearch(context, click, teamId, ref.s) : exportFromHome(context, click, teamId, ref.s);
  }
  if (isMemoryAction(actionId)) return new SlackMemoryInteractions(context).handle(click, teamId, actionId, value);
  if (isApprovalAction(actionId)) return handleApprovalAction(context, click, teamId, actionId, value);
  const access = noteAccess[actionId];
  if (access) {
    const refusal = await noteRefusal(context, click, teamId, actionId, value, access);
    if (refusal) return new SlackMemoryInteractions(context).refuse(click, refusal);
  }
  switch (actionId) {
    case actionIds.pause:
    case actionIds.resume:
    case actionIds.stop: {
      const session = await context.stores.sessions.get(value);
      if (!session || session.platform !== 'slack' || session.workspaceId !== teamId) return;
      if (actionId === actionIds.stop) {
        // Stop is the starter's (or an admin's), like the stop command.
        const stop = await context.access.mayCommand('stop', context.people.requester(teamId, click.user.id), session);
        if (!stop.allowed) return ephemeral(context, click, stop.message);
      }
      if (actionId === actionIds.pause) await context.agent.pause(session.id);
      else if (actionId === actionIds.stop) await context.agent.stopRun(session.id, await context.people.name(teamId, click.user.id));
      else await context.agent.resume(session.id);
      context.log.info({ sessionId: session.id, userId: click.user.id, action: actionId }, 'slack-run-control');
      return;
    }
    case actionIds.memoryView:
      return openView(context, click, memoryChangeModal(value, await memoryRunDiffs(context.stores.documents, value), 0));
    case actionIds.resetView: {
      const ref = parseJsonValue(resetViewRef, value);
      if (!ref) return staleButton(context, click, actionId);
      return openView(context, click, resetModal(ref, await mainAt(context, ref), 0));
    }
    case actionIds.memoryRevert:
      return revert(context, click, teamId, value);
    case actionIds.memoryUndoBoth: {
      const ref = parseJsonValue(undoBothRef, value);
      return ref ? undoBoth(context, click, teamId, ref) : staleButton(context, click, actionId);
    }
    case actionIds.memoryKeep:
      return updateView(context, click, outcomeModal('Nothing was changed: the later changes stay as they are.'));
    case actionIds.memoryAck: {
      const who = await reviewer(context, click, teamId);
      const spaceId = await noteSpace(context, actionId, value);
      if (spaceId) await context.agent.review.approve(spaceId, value, who);
      await ephemeral(context, click, `👍 Thanks, ${who.name}: this memory change is marked as reviewed.`);
      return;
    }
    default:
      if (actionId.startsWith(actionIds.viewPage)) {
        const ref = parseJsonValue(pageRef, value);
        if (!ref) return staleButton(context, click, actionId);
        return ref.kind === 'document' || ref.kind === 'history' ? new SlackMemoryInteractions(context).turnMemoryPage(click, teamId, ref) : turnPage(context, click, ref);
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
  const who = await reviewer(context, click, teamId);
  const { name } = who;
  const result = await context.agent.review.revert(memoryRunId, who);
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
  const thread = click.view?.private_metadata ? parseJsonValue(threadRef, click.view.private_metadata) : null;
  const who = await reviewer(context, click, teamId, thread);
  const { name } = who;
  const outcome = await context.agent.review.revertWithLaterChanges(ref.r, ref.d, ref.v, who);
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

/** The clicker as a reviewer, with the session of the thread they clicked in (if any). */
async function reviewer(context: SlackContext, click: BlockActionBody, teamId: string, thread: ThreadRef | null = threadOf(click)): Promise<Reviewer> {
  const name = await context.people.name(teamId, click.user.id);
  const session = thread ? await context.agent.findSession(slackThread(teamId, thread.channelId, thread.threadTs)) : null;
  return { userId: click.user.id, name, ...(session ? { sessionId: session.id } : {}) };
}

/**
 * Why the clicker may not use a note's button (the space of the memory change or reset, checked
 * against the channel clicked in and MEMORY_EDITORS), or null when they may. A note whose space
 * cannot be told (a forged value) changes nothing anyway.
 */
async function noteRefusal(context: SlackContext, click: BlockActionBody, teamId: string, actionId: string, value: string, action: MemoryAction): Promise<string | null> {
  const spaceId = await noteSpace(context, actionId, value);
  if (!spaceId) return null;
  const space = await context.stores.spaces.get(spaceId);
  if (!space) return null;
  // A click in a modal names no channel: membership of the space's conversation decides.
  const decision = await context.memory.check(space, action, { platform: 'slack', workspaceId: teamId, channelId: click.channel?.id ?? null, userId: click.user.id });
  if (decision.allowed) return null;
  context.log.info({ userId: click.user.id, actionId }, 'slack-memory-refused');
  return decision.reason;
}

/** The memory space a note's button acts on. */
async function noteSpace(context: SlackContext, actionId: string, value: string): Promise<string | null> {
  if (actionId === actionIds.resetView) {
    const ref = parseJsonValue(resetViewRef, value);
    return ref ? ((await context.stores.sessions.get(ref.sessionId))?.memorySpaceId ?? null) : null;
  }
  const memoryRunId = actionId === actionIds.memoryUndoBoth || actionId === actionIds.memoryKeep ? parseJsonValue(undoBothRef, value)?.r : value;
  if (!memoryRunId) return null;
  const [change] = await context.stores.documents.runChanges(memoryRunId);
  const document = change ? await context.stores.documents.get(change.documentId) : null;
  return document?.spaceId ?? null;
}

/** Tells the thread who reverted what (once per run and set of documents). */
async function announceRevert(context: SlackContext, teamId: string, thread: ThreadRef, memoryRunId: string, name: string, paths: string[]): Promise<void> {
  const session = await context.agent.findSession(slackThread(teamId, thread.channelId, thread.threadTs));
  await context.outbox.enqueue({
    idempotencyKey: `revert-note:${memoryRunId}:${paths.join(',')}`,
    sessionId: session?.id ?? null,
    platform: slackPlatform,
    operation: 'post',
    payload: { team: teamId, channel: thread.channelId, thread_ts: thread.threadTs, markdown: revertNoteLine(name, paths) },
  });
}

/** Says so when a button's value cannot be read (forged, or made by an older version). */
async function staleButton(context: SlackContext, click: BlockActionBody, actionId: string): Promise<void> {
  context.log.warn({ actionId, userId: click.user.id }, 'slack-action-value-invalid');
  await ephemeral(context, click, 'This button no longer works: open the note again, or mention @hippo in the thread.');
}

async function updateView(context: SlackContext, click: BlockActionBody, view: unknown): Promise<void> {
  if (!click.view) return;
  await (await clientOf(context, click)).apiCall('views.update', { view_id: click.view.id, view });
}

async function turnPage(context: SlackContext, click: BlockActionBody, ref: PageRef): Promise<void> {
  if (!click.view) return;
  const view = ref.kind === 'memory'
    ? memoryChangeModal(ref.ref, await memoryRunDiffs(context.stores.documents, ref.ref), ref.page)
    : await (async () => {
        const reset = parseJsonValue(resetViewRef, ref.ref);
        return reset ? resetModal(reset, await mainAt(context, reset), ref.page) : outcomeModal('This page can no longer be shown.');
      })();
  await (await clientOf(context, click)).apiCall('views.update', { view_id: click.view.id, ...(click.view.hash ? { hash: click.view.hash } : {}), view });
}

/** MAIN.md's content at the version a reset read, or null. */
async function mainAt(context: SlackContext, ref: ResetViewRef): Promise<string | null> {
  if (!ref.mainDocumentId || ref.mainVersion === null) return null;
  const versions = await context.stores.documents.versions(ref.mainDocumentId);
  return versions.find((version) => version.version === ref.mainVersion)?.content ?? null;
}

async function openView(context: SlackContext, click: BlockActionBody, view: unknown): Promise<void> {
  if (!click.trigger_id) return;
  await (await clientOf(context, click)).apiCall('views.open', { trigger_id: click.trigger_id, view });
}

/** A reply only the clicking person sees, in the thread of the clicked message. */
async function ephemeral(context: SlackContext, click: BlockActionBody, text: string): Promise<void> {
  const thread = threadOf(click);
  if (!thread) return;
  await postEphemeral(context, { teamId: teamOf(click), channelId: thread.channelId, userId: click.user.id, threadTs: thread.threadTs }, text);
}

const teamOf = teamOfBody;

async function clientOf(context: SlackContext, click: BlockActionBody) {
  return (await workspaceOf(context, teamOf(click))).client;
}

function threadOf(click: BlockActionBody): { channelId: string; threadTs: string } | null {
  if (!click.channel || !click.message) return null;
  return { channelId: click.channel.id, threadTs: click.message.thread_ts ?? click.message.ts };
}
