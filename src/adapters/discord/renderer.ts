// Turns agent events of Discord sessions into outbox items (docs/style.md §8): 👀 → ✅ reactions on
// steer messages, one status card per run edited in place (with the run's tool calls and the TODO.md
// plan as a checklist, since Discord has no task cards), the answer streamed into a message
// edited at most once a second and then replaced by its first part (the rest split at 2,000
// characters), memory and reset notes, error notes; and the typing indicator while a run works. Items of one
// session are enqueued in event order (the outbox then sends them in that order). Card edits are
// not throttled here: the outbox sends only the newest pending edit of a card, and discord.js
// waits out Discord's per-channel rate limit, so bursts of tool calls coalesce by themselves.
import { approvalCardBody, decidedApprovalBody } from './approval-views.js';
import type { AgentEvent } from '../../core/events.js';
import type { SessionRecord, SteerRecord } from '../../core/store.js';
import type { Logger } from '../../log.js';
import { AnswerStreams, closingText, endsModelCall, streamKey, type AnswerStream } from '../chat/answer-stream.js';
import { markingDelivered } from '../chat/delivery-marks.js';
import { budgetNoteText, errorNoteText, inheritedNoteText, stepLimitNoteText } from '../chat/notes.js';
import type { OutboxEntry } from '../chat/outbox.js';
import { untilStored } from '../chat/storage-retry.js';
import { applyRunEvent, startRunStatus, type RunStatus } from '../chat/run-status.js';
import { applyTaskEvent, parsePlan, startTaskList, type Plan, type TaskList } from '../chat/task-list.js';
import { outboxPayload, type MessageBody } from './deliver.js';
import { parseSteerKey } from './ids.js';
import { discordStreamChars, memoryNoteBody, resetNoteBody, statusCardBody, streamBody, textBodies } from './message-views.js';
import { KeyedQueue } from '../chat/keyed-queue.js';
import type { ChatRenderer } from '../chat/chat-adapter.js';
import type { TypingIndicator } from './typing-indicator.js';

/** What the renderer needs. */
export interface DiscordRendererDeps {
  outbox: { enqueue(entry: OutboxEntry): Promise<{ inserted: boolean; fenced?: boolean }> };
  typing: TypingIndicator;
  log: Logger;
  /** How people resume after an error, shown in the error note (e.g. "/hippo resume"). */
  resumeHint: string;
  /** Tells core an answer or note is in the outbox (it will not be re-sent after a crash). */
  delivered: (event: AgentEvent) => Promise<void>;
  /** Context use in percent at the end of a run, for the card (optional). */
  contextPercent?: (sessionId: string) => Promise<number | null>;
  /** The session's TODO.md as stored (null: none), so a run's card starts with the current plan (optional). */
  todo?: (session: SessionRecord) => Promise<string | null>;
  now?: () => number;
  /** Least time between two edits of a streamed answer, ms (default 1,000). */
  streamIntervalMs?: number;
  /** LINK_PREVIEWS=on: answers keep Discord's link embeds (default: suppressed). */
  linkPreviews?: boolean;
}

/** Reaction shown while a steer message is queued, replaced by the second once the agent took it. */
export const queuedEmoji = '👀';
/** Reaction shown once the agent has taken a steer message into its context. */
export const takenEmoji = '✅';

/** How long an ended run's card stays editable by later pause/resume events (ms). */
const cardRetentionMs = 60 * 60_000;

interface Card {
  key: string;
  status: RunStatus;
  /** The run's tool calls and the session's plan (the checklist under the status line). */
  tasks: TaskList;
  edits: number;
}

/** Renders agent events of Discord sessions; give `handle` to the agent's event bus. */
export class DiscordRenderer implements ChatRenderer {
  private readonly cards = new Map<string, Card>();
  private readonly queue: KeyedQueue;
  private readonly now: () => number;
  /** The answers forming now, one per session. */
  private readonly streams: AnswerStreams;
  /** Renders an event; what it took is no longer owed (R17). */
  private readonly deliver = markingDelivered((event) => this.render(event), (event) => this.deps.delivered(event));

  constructor(private readonly deps: DiscordRendererDeps) {
    this.now = deps.now ?? Date.now;
    this.queue = new KeyedQueue((error, sessionId) => deps.log.error({ err: error, sessionId }, 'discord-render-failed'));
    this.streams = new AnswerStreams({
      maxChars: discordStreamChars, intervalMs: deps.streamIntervalMs ?? 1_000, now: this.now,
      schedule: (sessionId, write) => void this.queue.post(sessionId, () => untilStored(write, this.deps.log, { sessionId })),
      write: (stream, first) => this.writeStream(stream, first),
    });
  }

  /** Takes one event (synchronously; the enqueueing happens in order, in the background). */
  handle(event: AgentEvent): void {
    if (event.session.platform !== 'discord') return;
    // Deltas are coalesced here, synchronously: nothing is queued or stored per token.
    if (event.type === 'text-delta') return this.streams.delta(event);
    const ended = endsModelCall(event) ? this.streams.end(event.session.id) : null;
    const endedAt = this.now();
    // Intermediate messages change nothing Hippo shows, unless they end a stream.
    if (event.type === 'assistant-message' && !ended) return;
    void this.queue.post(event.session.id, () => untilStored(async () => {
      if (ended && event.type !== 'answer') await this.closeStream(ended, event, endedAt);
      if (event.type !== 'assistant-message') await this.deliver(event);
    }, this.deps.log, { sessionId: event.session.id }));
  }

  /** Resolves when every event handled so far is in the outbox. */
  flush(): Promise<void> {
    return this.queue.idle();
  }

  /** Stops the typing indicators (shutdown) and writes what streams have not written yet. */
  stop(): void {
    this.streams.flushAll();
    this.deps.typing.stopAll();
  }

  // biome-ignore lint/suspicious/noConfusingVoidType: a render that returns nothing took the event; only false leaves it owed
  private async render(event: AgentEvent): Promise<boolean | void> {
    const { session } = event;
    switch (event.type) {
      case 'steer-received':
        return this.react(session, event.steer, queuedEmoji);
      case 'steer-taken':
        for (const steer of event.steers) {
          await this.react(session, steer, takenEmoji);
          await this.react(session, steer, queuedEmoji, 'unreact');
        }
        return;
      case 'run-start':
        this.deps.typing.start(session.threadKey);
        return this.startCard(session);
      case 'answer':
        // A fenced answer (this replica lost the session) stays owed; the lease holder re-sends it.
        // Its first part replaces the message the position streamed into (after a crash too).
        return (await this.post(session, `discord:answer:${event.segmentId}:${event.seq}`, textBodies(event.text, this.deps.linkPreviews), event.fencingToken, streamKey('discord:', event.segmentId, event.seq)))
          && this.uploads(session, event.files, event.fencingToken);
      case 'memory-updated':
        if (event.changes.length > 0 || event.request) await this.post(session, `discord:memory:${event.memoryRunId}`, [memoryNoteBody(event)]);
        return;
      case 'context-reset':
        await this.post(session, `discord:reset:${event.segmentId}`, [resetNoteBody(event)]);
        return;
      case 'error':
        await this.updateCard(event);
        await this.post(session, `discord:error:${session.id}:${this.now()}`, textBodies(errorNoteText(event.error, this.deps.resumeHint), this.deps.linkPreviews));
        return;
      case 'budget':
        await this.post(session, `discord:budget:${session.id}:${event.level}:${event.scope}:${event.capUsd}:${event.period}`, textBodies(budgetNoteText(event, '@Hippo budget 5'), this.deps.linkPreviews));
        return;
      case 'step-limit':
        // R21: keyed by the session's step count, so the note emitted again after a crash is this one (R17).
        await this.post(session, `discord:steps:${session.id}:${event.sessionSteps}`, textBodies(stepLimitNoteText(event, this.deps.resumeHint), this.deps.linkPreviews));
        return;
      case 'memory-inherited':
        await this.post(session, `discord:inherited:${event.segmentId}`, textBodies(inheritedNoteText(event, '/hippo memory')));
        return;
      case 'run-end':
        this.deps.typing.stop(session.threadKey);
        return this.updateCard(event);
      case 'approval-requested':
        // R23: keyed by the approval: emitted again after a restart, it is the same card.
        await this.updateCard(event);
        await this.post(session, `discord:approval:${event.approval.id}`, [approvalCardBody(event.approval, event.destructive)]);
        return;
      case 'approval-decided':
        await this.updateCard(event);
        await this.deps.outbox.enqueue({
          idempotencyKey: `discord:approval:${event.approval.id}:decided`, sessionId: session.id, platform: 'discord', operation: 'update',
          targetKey: `discord:approval:${event.approval.id}`, payload: outboxPayload({ channelId: session.threadKey, body: decidedApprovalBody(event.approval) }),
        });
        return;
      default:
        return this.updateCard(event);
    }
  }

  private async react(session: SessionRecord, steer: SteerRecord, emoji: string, operation: 'react' | 'unreact' = 'react'): Promise<void> {
    const target = parseSteerKey(steer.platformMessageKey);
    if (!target) return;
    await this.deps.outbox.enqueue({
      idempotencyKey: `discord:${operation}:${target.messageId}:${emoji}`,
      sessionId: session.id,
      platform: 'discord',
      operation,
      payload: outboxPayload({ channelId: target.channelId, messageId: target.messageId, emoji }),
    });
  }

  private async startCard(session: SessionRecord): Promise<void> {
    const plan = await this.currentPlan(session);
    this.forgetOldCards();
    const status = startRunStatus(this.now());
    const card: Card = { key: `discord:card:${session.id}:${status.startedAt}`, status, tasks: startTaskList(plan), edits: 0 };
    this.cards.set(session.id, card);
    await this.deps.outbox.enqueue({
      idempotencyKey: card.key,
      sessionId: session.id,
      platform: 'discord',
      operation: 'post',
      payload: outboxPayload({ channelId: session.threadKey, body: statusCardBody(session.id, status, this.now(), card.tasks) }),
    });
  }

  /**
   * The session's plan as a run starts: TODO.md as stored (written in an earlier run, before a
   * restart), else what the previous card showed.
   */
  private async currentPlan(session: SessionRecord): Promise<Plan | null> {
    const shown = this.cards.get(session.id)?.tasks.plan ?? null;
    if (!this.deps.todo) return shown;
    const todo = await this.deps.todo(session).catch((error: unknown) => {
      this.deps.log.warn({ err: error, sessionId: session.id }, 'discord-plan-read-failed');
      return undefined;
    });
    if (todo === undefined) return shown;
    return todo === null ? null : parsePlan(todo);
  }

  /** Cards of runs that ended long ago will not change again; dropping them bounds memory. */
  private forgetOldCards(): void {
    for (const [sessionId, card] of this.cards) {
      if (card.status.endedAt !== null && this.now() - card.status.endedAt > cardRetentionMs) this.cards.delete(sessionId);
    }
  }

  /** Edits the card when the event changes what it shows (latest edit wins in the outbox). */
  private async updateCard(event: AgentEvent): Promise<void> {
    const card = this.cards.get(event.session.id);
    if (!card) return;
    let status = applyRunEvent(card.status, event, this.now());
    if (event.type === 'run-end' && this.deps.contextPercent) {
      const percent = await this.deps.contextPercent(event.session.id).catch(() => null);
      if (percent !== null) status = { ...status, contextPercent: percent };
    }
    const tasks = applyTaskEvent(card.tasks, event);
    if (status === card.status && tasks === card.tasks) return;
    card.status = status;
    card.tasks = tasks;
    card.edits += 1;
    await this.deps.outbox.enqueue({
      idempotencyKey: `${card.key}:u${card.edits}`,
      sessionId: event.session.id,
      platform: 'discord',
      operation: 'update',
      targetKey: card.key,
      replacesPending: true,
      payload: outboxPayload({ channelId: event.session.threadKey, body: statusCardBody(event.session.id, status, this.now(), tasks) }),
    });
  }

  /**
   * Enqueues the messages; false when the write was fenced off. With `replaces`, the first one
   * replaces that streamed message (posted when there is none) and its pending edits are dropped.
   */
  private async post(session: SessionRecord, key: string, bodies: MessageBody[], fencingToken: number | null = null, replaces?: string): Promise<boolean> {
    for (const [index, body] of bodies.entries()) {
      const finish = replaces !== undefined && index === 0;
      const result = await this.deps.outbox.enqueue({
        idempotencyKey: bodies.length === 1 ? key : `${key}:${index + 1}`,
        sessionId: session.id,
        platform: 'discord',
        operation: finish ? 'finish' : 'post',
        payload: outboxPayload({ channelId: session.threadKey, body }),
        ...(finish ? { targetKey: replaces, supersedes: ['update'], supersedesUntriedTarget: true } : {}),
        // The worker's lease token: a replica that lost the session cannot post its answer.
        ...(fencingToken === null ? {} : { fencingToken: BigInt(fencingToken) }),
      });
      if (result.fenced) return false;
    }
    return true;
  }

  /** Files the answer sends follow its text, keyed by the call that asked (never sent twice); false when fenced. */
  private async uploads(session: SessionRecord, files: ReadonlyArray<{ callId: string; path: string }>, fencingToken: number | null): Promise<boolean> {
    for (const file of files) {
      const result = await this.deps.outbox.enqueue({
        idempotencyKey: `discord:upload:${session.id}:${file.callId}`, sessionId: session.id, platform: 'discord', operation: 'upload',
        payload: outboxPayload({ channelId: session.threadKey, sessionId: session.id, path: file.path }),
        ...(fencingToken === null ? {} : { fencingToken: BigInt(fencingToken) }),
      });
      if (result.fenced) return false;
    }
    return true;
  }

  /** One write of a forming answer: its message is posted once, then edited (at most once a second). */
  private async writeStream(stream: AnswerStream, first: boolean): Promise<void> {
    const { session } = stream;
    const key = streamKey('discord:', stream.segmentId, stream.seq);
    const payload = outboxPayload({ channelId: session.threadKey, body: streamBody(stream.text, true, this.deps.linkPreviews) });
    const base = { sessionId: session.id, platform: 'discord', payload };
    // This position may have streamed before (a failed call, a crashed process): then that message is edited.
    if (first && (await this.deps.outbox.enqueue({ ...base, idempotencyKey: key, operation: 'post' })).inserted) return;
    await this.deps.outbox.enqueue({ ...base, idempotencyKey: `${key}:u${this.now()}`, operation: 'update', targetKey: key, replacesPending: true });
  }

  /** A streamed call that did not end in an answer: its message keeps its text, finished. */
  private async closeStream(stream: AnswerStream, event: AgentEvent, endedAt: number): Promise<void> {
    const key = streamKey('discord:', stream.segmentId, stream.seq);
    await this.deps.outbox.enqueue({
      idempotencyKey: `${key}:close:${endedAt}`, sessionId: stream.session.id, platform: 'discord', operation: 'stream-close', targetKey: key, supersedes: ['update'],
      payload: outboxPayload({ channelId: stream.session.threadKey, body: streamBody(closingText(stream, event, discordStreamChars), false, this.deps.linkPreviews) }),
    });
  }
}
