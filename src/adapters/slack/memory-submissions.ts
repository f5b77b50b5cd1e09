// The memory browser's modal submissions in Slack: the chosen part to edit, a saved edit (compare-
// and-set: when someone wrote in between, the person gets the newer text with their edit kept, and
// decides), a pinned or unpinned line, an undone change. Each is checked like a click (the space's
// conversation, MEMORY_EDITORS) and answered in the modal itself, within Slack's 3 seconds.
import type { types } from '@slack/bolt';
import type { SlackRoutes } from './routes.js';
import { z } from 'zod';
import { ConflictError } from '../../core/errors.js';
import { compactDiff, diffLines } from '../../core/line-diff.js';
import { pinText } from '../../core/pinned-lines.js';
import type { Reviewer } from '../../core/agent.js';
import type { DocumentRecord } from '../../core/store.js';
import { decodeJoins, encodeJoins, joinPieces, partPieces } from '../../core/document-parts.js';
import type { MemoryAction } from '../chat/memory-access.js';
import { editModal, memoryCallbacks, slackPartLimits, undoModal, type EditRef, type Origin } from './memory-views.js';
import { editForm, SlackMemoryInteractions, type Actor } from './memory-interactions.js';
import { outcomeModal, type ModalView } from './modals.js';
import { parseJsonValue, teamOfBody, viewSubmissionBody, type ViewSubmissionBody } from './payloads.js';
import { slackPlatform, slackThread, type SlackContext } from './context.js';

const editRef = z.object({ d: z.string(), v: z.number().int(), i: z.number().int().optional(), j: z.string().optional(), c: z.string().nullable(), t: z.string().nullable() });

/** What a submission answers: close the modal, or show another view in its place. */
type Answer = { close: true } | { view: ModalView };

/** Registers the submission handlers on the Bolt app. */
export function registerMemorySubmissions(routes: SlackRoutes, context: SlackContext): void {
  const handlers: Record<string, (submission: Submission) => Promise<Answer>> = {
    [memoryCallbacks.choosePart]: (submission) => choosePart(context, submission),
    [memoryCallbacks.save]: (submission) => save(context, submission),
    [memoryCallbacks.pin]: (submission) => pin(context, submission),
    [memoryCallbacks.undo]: (submission) => undo(context, submission),
  };
  for (const [callbackId, handle] of Object.entries(handlers)) {
    routes.view(callbackId, async ({ ack, body }) => {
      const submission = readSubmission(body);
      // The answer comes back in the acknowledgement (Slack waits up to 3 seconds for it).
      const answer = submission ? await handle(submission).catch((error: unknown) => failed(context, error)) : { view: outcomeModal('This form could not be read; open it again.', 'Memory') };
      // Our views are plain JSON built to Block Kit's rules; Bolt wants its own View type for them.
      await ack('view' in answer ? { response_action: 'update', view: answer.view as unknown as types.View } : undefined);
    });
  }
}

/** A parsed submission: who, from where, the modal's reference and its inputs. */
interface Submission {
  body: ViewSubmissionBody;
  ref: z.infer<typeof editRef>;
  actor: Actor;
  values: Record<string, Record<string, { value?: string | null | undefined; selected_option?: { value: string } | null | undefined }>>;
}

function readSubmission(raw: unknown): Submission | null {
  const parsed = viewSubmissionBody.safeParse(raw);
  if (!parsed.success) return null;
  const body = parsed.data;
  const ref = parseJsonValue(editRef, body.view.private_metadata);
  if (!ref) return null;
  const teamId = teamOfBody(body);
  // A submission names no channel of its own: membership of the space's conversation decides
  // (the metadata only says where to tell the thread).
  return { body, ref, actor: { teamId, userId: body.user.id, channelId: null }, values: body.view.state.values };
}

async function choosePart(context: SlackContext, submission: Submission): Promise<Answer> {
  const document = await allowed(context, submission, 'edit');
  if (typeof document === 'string') return refusal(document);
  const index = Number(submission.values['part']?.['part']?.selected_option?.value ?? 0);
  return { view: editForm(document, Number.isInteger(index) ? index : 0, origin(submission)) };
}

async function save(context: SlackContext, submission: Submission): Promise<Answer> {
  const document = await allowed(context, submission, 'edit');
  if (typeof document === 'string') return refusal(document);
  const { ref } = submission;
  const pieces = Object.keys(submission.values)
    .filter((block) => /^piece_\d+$/.test(block))
    .sort((left, right) => Number(left.slice(6)) - Number(right.slice(6)))
    .map((block) => submission.values[block]?.['text']?.value ?? '');
  const text = joinPieces(pieces, decodeJoins(ref.j ?? ''));
  const who = await reviewer(context, submission);
  const outcome = await context.agent.review.edit({ documentId: ref.d, baseVersion: ref.v, partIndex: ref.i ?? 0, text }, slackPartLimits, who, document);
  switch (outcome.status) {
    case 'saved':
      await tellThread(context, submission, who, `edit:${outcome.document.id}:${outcome.document.version}`, `✏️ ${who.name} edited ${outcome.document.path} (now v${outcome.document.version})`);
      return { close: true };
    case 'unchanged':
      return { close: true };
    case 'gone':
      return { view: outcomeModal('This document no longer exists (or that version is gone): nothing was saved.', 'Edit memory') };
    case 'conflict': {
      // Their text stays in the form; the newer text is shown above it; Save now applies theirs
      // over the newer version (or Cancel keeps the newer one).
      const split = partPieces(text, slackPartLimits.inputChars);
      const part = outcome.part ?? { index: -1, key: { heading: '', occurrence: -1, chunk: 0 }, title: 'the end of the document', startLine: 0, endLine: 0, text: '' };
      const next: EditRef = { d: outcome.document.id, v: outcome.document.version, i: part.index, j: encodeJoins(split.joins), ...origin(submission) };
      return { view: editModal(outcome.document, part, split.pieces, next, { later: outcome.later, newerText: outcome.part?.text ?? null }) };
    }
  }
}

async function pin(context: SlackContext, submission: Submission): Promise<Answer> {
  const document = await allowed(context, submission, 'pin');
  if (typeof document === 'string') return refusal(document);
  const index = Number(submission.values['line']?.['line']?.selected_option?.value ?? -1);
  // The line as the person saw it (the version of the form), pinned in the document as it is now.
  const shown = document.version === submission.ref.v ? document.content : (await context.stores.documents.versions(document.id)).find((version) => version.version === submission.ref.v)?.content ?? '';
  const line = pinText(shown.split('\n')[index] ?? '');
  if (line === '') return { view: outcomeModal('Choose a line to pin.', 'Pin a line') };
  const who = await reviewer(context, submission);
  try {
    if (document.pinnedLines.includes(line)) {
      await context.agent.review.unpin(document.id, line, who);
      return { view: outcomeModal(`Unpinned from ${document.path}: “${line}”. Background memory may change it again.`, 'Pin a line') };
    }
    await context.agent.review.pin(document.id, line, who);
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    return { view: outcomeModal(`${document.path} changed and no longer has that line: nothing was pinned. Open it again.`, 'Pin a line') };
  }
  await tellThread(context, submission, who, `pin:${document.id}:${line.slice(0, 40)}`, `📌 ${who.name} pinned a line in ${document.path}: “${line}”`);
  return { view: outcomeModal(`📌 Pinned in ${document.path}: “${line}”. Background memory keeps it word for word.`, 'Pin a line') };
}

async function undo(context: SlackContext, submission: Submission): Promise<Answer> {
  const document = await allowed(context, submission, 'revert');
  if (typeof document === 'string') return refusal(document);
  const who = await reviewer(context, submission);
  const outcome = await context.agent.review.undo(document.id, submission.ref.v, who);
  switch (outcome.status) {
    case 'reverted':
      await tellThread(context, submission, who, `undo:${document.id}:${outcome.document.version}`, `↩️ ${who.name} undid v${outcome.undone.version} of ${document.path} (now v${outcome.document.version})`);
      return { view: outcomeModal(`↩️ Undid v${outcome.undone.version} of ${document.path}: it is as before that change (now v${outcome.document.version}).`, 'Undo last change') };
    case 'changed-again': {
      // A change landed while they looked: show it and let them choose again.
      const { versions } = await context.stores.documents.history(document.id, { offset: 0, limit: 2 });
      const [latest, previous] = versions;
      if (!latest) return { view: outcomeModal('This document has no change to undo.', 'Undo last change') };
      const diff = compactDiff(diffLines(previous && !previous.deleted ? previous.content : '', latest.deleted ? '' : latest.content));
      const view = undoModal(outcome.document, latest, diff, { d: document.id, v: outcome.document.version, ...origin(submission) });
      view.blocks.unshift({ type: 'section', text: { type: 'mrkdwn', text: ':warning: It changed again while you were looking: this is the change that would be undone now.' } });
      return { view };
    }
    case 'nothing':
      return { view: outcomeModal('This document has no change to undo.', 'Undo last change') };
  }
}

/** The document when the submitter may do `action` to it, else the refusal's words. */
function allowed(context: SlackContext, submission: Submission, action: MemoryAction): Promise<DocumentRecord | string> {
  return new SlackMemoryInteractions(context).authorize(submission.actor, submission.ref.d, action);
}

function refusal(text: string): Answer {
  return { view: outcomeModal(text, 'Memory') };
}

function origin(submission: Submission): Origin {
  return { c: submission.ref.c, t: submission.ref.t };
}

/** The submitter as a reviewer, with the session of the thread they started from (if any). */
async function reviewer(context: SlackContext, submission: Submission): Promise<Reviewer> {
  const { actor, ref } = submission;
  const name = await context.people.name(actor.teamId, actor.userId);
  const session = ref.c && ref.t ? await context.agent.findSession(slackThread(actor.teamId, ref.c, ref.t)) : null;
  return { userId: actor.userId, name, ...(session ? { sessionId: session.id } : {}) };
}

/**
 * Tells the thread the person started from what they changed (nothing when they came from App
 * Home); the reviewer carries that thread's session, found once.
 */
async function tellThread(context: SlackContext, submission: Submission, who: Reviewer, key: string, text: string): Promise<void> {
  const { ref } = submission;
  if (!ref.c || !ref.t) return;
  await context.outbox.enqueue({
    idempotencyKey: `memory-review:${key}`, sessionId: who.sessionId ?? null, platform: slackPlatform, operation: 'post',
    payload: { channel: ref.c, thread_ts: ref.t, markdown: text },
  });
}

function failed(context: SlackContext, error: unknown): Answer {
  context.log.error({ err: error }, 'slack-memory-submission-failed');
  return { view: outcomeModal('Something went wrong and nothing was changed; try again in a moment.', 'Memory') };
}
