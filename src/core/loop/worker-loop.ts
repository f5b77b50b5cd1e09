// The worker loop (docs/memory-rules.md R9–R12). Reads like the spec:
//   model call → execute tool calls → checkpoint → drain steer messages → repeat;
//   an answer without tool calls → checkpoint → drain (or idle).
// A checkpoint is where memory forks (R2/R3), pauses (R11) and resets (R6) take effect.
import type { AgentDeps } from '../agent-context.js';
import type { ApprovalGate, ApprovalWaitScope } from './approval-gate.js';
import { answerFiles } from './answer-files.js';
import { modelImageTypes } from './attachments.js';
import { estimateTokens, imageSurplusTokens, requestTokens } from './context-window.js';
import type { StopReason } from '../events.js';
import type { LiveContext } from './live-context.js';
import { isTransient } from '../errors.js';
import { contentText, type ChatMessage, type ToolCall } from '../messages.js';
import { interruptedToolResult, notRunToolResult, stoppedToolResult } from './tool-executor.js';
import type { ToolOutcome } from '../tool.js';
import { buildRequest, callModel } from './model-call.js';
import { toolImagesMessage } from '../prompts/prompts.js';
import { fitToolImages, maxToolImageChars, type ToolImageTaken } from './image-fit.js';
import { retryWithoutRefusedImages } from './image-refusal.js';
import type { SteerInbox } from './steer-inbox.js';
import type { SessionRecord } from '../store.js';

export type CheckpointKind = 'after-tools' | 'after-answer';

/** What the loop needs from its session runner. */
export interface WorkerScope {
  deps: AgentDeps;
  /** The live session record (flags change while the loop runs). */
  session: () => SessionRecord;
  context: LiveContext;
  /** Memory trigger, then the pause/reset gate; a non-null result stops the loop. */
  checkpoint: (kind: CheckpointKind) => Promise<StopReason | null>;
  /** The session's queued steer messages. */
  steers: SteerInbox;
  /** Runs a slow wait (a model call, a tool) outside the runner's work slot. */
  waiting: <T>(wait: () => Promise<T>) => Promise<T>;
  /** Called before the loop does anything (a wake-up may find nothing to do: no run then). */
  onWork: () => void;
  /** The worker's model call got its first chunk (forks waiting for a cached prefix may go). */
  onModelResponseStart: () => void;
  /** R19, R21: right before each worker call; a non-null result stops the loop instead (a reset first, the step limit). */
  beforeModelCall?: () => Promise<StopReason | null>;
  /** R21: a worker answer was stored: the run took one more step (counted in the same write). */
  onAnswerStored?: () => void;
  /** R21: people's messages were taken into the context: a new run begins (counted in the same write). */
  onSteersTaken?: () => void;
  /** The fencing token of the session lease this worker runs under. */
  fencingToken: () => number | null;
  /** Who pressed Stop during this drive, if anyone: `signal` is aborted then too. */
  stoppedBy: () => string | null;
  /** Aborted on shutdown and on a person's Stop (distinct reasons). */
  signal: AbortSignal;
  /**
   * R23: the calls that wait for a person wait here. `leave` ends a drive that left a call waiting
   * (a pause: the session is paused now; a shutdown or a lost lease), mid-batch: the next drive
   * waits on the same approval.
   */
  approvals?: { gate: ApprovalGate; shouldLeave: ApprovalWaitScope['shouldLeave']; leave: () => Promise<StopReason> };
}

/** Drives the worker until it is idle or stopped at a checkpoint. Throws on model failure. */
export async function runWorkerLoop(scope: WorkerScope): Promise<StopReason> {
  const { context } = scope;
  for (;;) {
    switch (context.tail()) {
      case 'tools-pending': {
        scope.onWork();
        // Includes the pending calls of a crashed turn: they run before any steer is appended (R9, R12).
        // After a Stop every call still gets its result ("stopped"), so the context stays valid.
        const left = await executePendingToolCalls(scope);
        if (scope.stoppedBy() !== null) return 'stopped';
        // R23: a call still waits for a person; no checkpoint inside a batch (a fork needs every result).
        if (left && scope.approvals) return scope.approvals.leave();
        const stop = await scope.checkpoint('after-tools');
        if (stop) return stop;
        await drainSteers(scope);
        continue;
      }
      case 'needs-answer': {
        scope.onWork();
        if (scope.stoppedBy() !== null) return 'stopped';
        if (scope.signal.aborted) return 'shutdown';
        // After tool results (e.g. resuming after a pause or reset) queued steers join first.
        await drainSteers(scope);
        const full = await scope.beforeModelCall?.();
        if (full) return full;
        let message: ChatMessage;
        try {
          message = await callWorkerModel(scope);
        } catch (error) {
          // A stopped call leaves no partial assistant message: the next call sees a valid context.
          if (scope.stoppedBy() !== null) return 'stopped';
          throw error;
        }
        if (message.tool_calls?.length) continue;
        const stop = await scope.checkpoint('after-answer');
        if (stop) return stop;
        if (await drainSteers(scope)) continue;
        return 'idle';
      }
      case 'settled': {
        if (await drainSteers(scope)) continue;
        return 'idle';
      }
    }
  }
}

async function callWorkerModel(scope: WorkerScope): Promise<ChatMessage> {
  const { deps, context } = scope;
  const session = scope.session();
  // An answer computed before the database went away is stored now instead of asked for again.
  const held = context.heldAnswer();
  // The position this call's answer takes: nothing else is appended while it runs.
  const position = { segmentId: context.segment.id, seq: context.nextSeq };
  let text = '';
  // R22: an image the provider refuses is dropped from the context for good, and the call made once more.
  const refusal = { context, shown: () => buildRequest(deps, session.id, context.messages).messages, log: deps.log, sessionId: session.id };
  const response = held
    ? held
    : await retryWithoutRefusedImages(refusal, () => scope.waiting(async () => {
        const called = await callModel(deps, buildRequest(deps, session.id, context.messages), {
          sessionId: session.id,
          segmentId: context.segment.id,
          role: 'worker',
          signal: scope.signal,
          onTextDelta: (delta) => {
            text += delta;
            deps.events.emit({ type: 'text-delta', session, ...position, delta, text });
          },
          onResponseStart: scope.onModelResponseStart,
          usageWithAnswer: true,
        });
        // R2: provider usage first (plus the image bytes it does not count); an estimate of the
        // whole request when the provider reports none.
        const contextTokens = called.usage
          ? called.usage.promptTokens + imageSurplusTokens(context.messages)
          : requestTokens(context.messages, deps.tools.definitions);
        return { message: called.message, contextTokens, usage: called.usageRecord };
      }));
  const isAnswer = !response.message.tool_calls?.length;
  // An answer is marked until the chat adapter has taken it, so a crash cannot lose it. The
  // message, its context size and the call's usage row are one statement (held together when
  // the database is away); refused (another replica wrote the session), the usage row is written
  // apart: the call was paid for.
  const first = response.message.tool_calls?.[0];
  const startCall = first ? beginsWithThisWrite(scope, first) : undefined;
  const entry = await context
    .appendResult(
      { kind: 'answer', seq: context.nextSeq, message: response.message, contextTokens: response.contextTokens, ...(response.usage ? { usage: response.usage } : {}) },
      { awaitingDelivery: isAnswer, ...(startCall ? { startCall } : {}) },
    )
    .catch(async (error: unknown) => {
      if (!isTransient(error) && response.usage) await deps.stores.usage.record(response.usage).catch(() => undefined);
      throw error;
    });
  scope.onAnswerStored?.();
  deps.events.emit({ type: 'assistant-message', session, message: response.message, segmentId: context.segment.id, seq: entry.seq });
  if (isAnswer) {
    const files = answerFiles(context.entries, entry.seq, (tool) => deps.tools.deliversFile(tool));
    deps.events.emit({ type: 'answer', session, text: contentText(response.message.content), segmentId: context.segment.id, seq: entry.seq, fencingToken: scope.fencingToken(), files });
  }
  return response.message;
}

/**
 * Runs the tool calls that have no result yet, in order, persisting each result (R12). True when
 * it left a call waiting for a person (R23) and the rest of the batch with it.
 */
async function executePendingToolCalls(scope: WorkerScope): Promise<boolean> {
  const { deps, context } = scope;
  const session = scope.session();
  const images: ToolImageTaken[] = [];
  const pending = context.pendingToolCalls();
  // R2/R19: one batch cannot make the next call unsendable: its results share the room left under
  // the hard limit, each call the room still left divided by the calls still to run.
  let roomTokens = batchRoomTokens(deps.settings, context.nextCallTokens());
  for (const [index, call] of pending.entries()) {
    // A result computed before the database went away is stored now; the tool does not run twice.
    const held = context.heldToolResult(call.id);
    const stoppedBefore = scope.stoppedBy();
    if (!held && stoppedBefore !== null) {
      // R9/R12: no call is left without a result; this one never ran.
      await context.appendResult({ kind: 'tool-result', callId: call.id, message: { role: 'tool', tool_call_id: call.id, content: notRunToolResult(stoppedBefore) }, ok: false });
      continue;
    }
    if (!held) deps.events.emit({ type: 'tool-call-start', session, call });
    const callImages: typeof images = [];
    const shareChars = Math.max(minResultChars, Math.floor((roomTokens / (pending.length - index)) * charsPerBudgetToken));
    // R23: a call the policy names waits for a person first (a held result was approved already).
    const verdict = held ? null : await approvalOf(scope, call);
    if (verdict?.kind === 'left') return true;
    let outcome = held
      ? { ok: held.ok, content: String(held.message.content ?? '') }
      : verdict?.kind === 'refused' ? { ok: false, content: verdict.content } : await runToolCall(scope, call, callImages, shareChars);
    const stoppedDuring = scope.stoppedBy();
    // Cancelled by Stop: answered "stopped" (not "interrupted"), whatever error the abort caused.
    if (!held && verdict?.kind !== 'refused' && stoppedDuring !== null && !outcome.ok) outcome = { ok: false, content: stoppedToolResult(stoppedDuring) };
    const message: ChatMessage = { role: 'tool', tool_call_id: call.id, content: outcome.content };
    roomTokens -= estimateTokens([message]);
    const next = pending[index + 1];
    const startCall = next ? beginsWithThisWrite(scope, next) : undefined;
    await context.appendResult({ kind: 'tool-result', callId: call.id, message, ok: outcome.ok }, startCall ? { startCall } : {});
    if (!held) deps.events.emit({ type: 'tool-call-end', session, call, ok: outcome.ok, result: outcome.content });
    if (outcome.ok) images.push(...callImages);
  }
  // Images tools returned follow all results of the batch (a tool result carries text only); lost
  // if the process dies right before this append (the results say they were returned). R22: each
  // is checked and made to fit the provider first.
  if (images.length > 0) await context.append(toolImagesMessage(await fitToolImages(scope, images)));
  return false;
}

/** R23: whether the call may run now (no approvals configured: it may). */
async function approvalOf(scope: WorkerScope, call: ToolCall) {
  const approvals = scope.approvals;
  if (!approvals?.gate.needs(call.function.name)) return null;
  return approvals.gate.check({ ...scope, shouldLeave: approvals.shouldLeave }, call);
}

/**
 * Runs one call. A call that had begun before a crash is not run again unless its tool is safe to
 * repeat: it may be what crashed the process (a hostile page), or have done its effect already.
 */
async function runToolCall(scope: WorkerScope, call: ToolCall, images: ToolImageTaken[], limitChars: number): Promise<ToolOutcome> {
  const { deps, context } = scope;
  const session = scope.session();
  if (!deps.tools.isRepeatable(call.function.name) && !(await context.beginCall(call.id))) {
    deps.log.warn({ sessionId: session.id, tool: call.function.name, callId: call.id }, 'tool-call-not-repeated');
    return { ok: false, content: interruptedToolResult };
  }
  return scope.waiting(() => deps.tools.execute(call, {
    role: 'worker',
    sessionId: session.id,
    segmentId: context.segment.id,
    memorySpaceId: session.memorySpaceId,
    contextWindow: deps.settings.contextWindow,
    resultLimitChars: limitChars,
    signal: scope.signal,
    ...(deps.settings.images ? {
      addImage: (image) => {
        if (image.data.length > maxToolImageChars || !modelImageTypes.has(image.mimeType)) return false;
        images.push({ callId: call.id, tool: call.function.name, mimeType: image.mimeType, data: image.data });
        return true;
      },
    } : {}),
  }));
}

/**
 * The call that runs right after the write at hand, when its begin mark can go with that write
 * (one commit fewer per tool step): a call not safe to repeat, with no held result, before any
 * Stop. A crash between the write and the call leaves it marked: it counts as interrupted.
 */
function beginsWithThisWrite(scope: WorkerScope, call: ToolCall): string | undefined {
  if (scope.deps.tools.isRepeatable(call.function.name) || scope.context.heldToolResult(call.id) || scope.stoppedBy() !== null) return undefined;
  // R23: marked only once approved, so a crash while it waits leaves it to wait again, not interrupted.
  if (scope.approvals?.gate.needs(call.function.name)) return undefined;
  return call.id;
}

/** Characters a result may have per token of room: under 4, as JSON escapes weigh more (capHeadTail weighs non-ASCII text as R2 counts it). */
const charsPerBudgetToken = 3;

/** A result keeps at least this much (its head and tail) however full the context: a reset follows. */
const minResultChars = 1_000;

/** Tokens the results of a batch may add before the next call reaches the hard limit (R19). */
function batchRoomTokens(settings: AgentDeps['settings'], nextCallTokens: number): number {
  return Math.max(0, Math.floor((settings.hardLimitPercent * settings.contextWindow) / 100) - nextCallTokens);
}

/**
 * R9: moves queued steer messages into the context; returns whether any were taken. With a reset
 * pending (deferred while a summarizer runs) they wait: they are delivered after the reset.
 */
async function drainSteers(scope: WorkerScope): Promise<boolean> {
  if (scope.session().resetRequested) return false;
  const taken = await scope.steers.take();
  if (taken.length === 0) return false;
  scope.onSteersTaken?.();
  scope.onWork();
  scope.deps.events.emit({ type: 'steer-taken', session: scope.session(), steers: taken });
  return true;
}
