// Renders agent events of Slack sessions into outbox items (docs/style.md §8): a status card per run
// (updated at most once a second), the answer streamed as it forms (at most one write a second)
// and then replaced by its first part, the other parts as new replies split at Slack's limits,
// reactions on steer messages (steer-reactions.ts), and the collapsed memory and reset notes. A run
// that calls tools has one stream, as Slack's AI apps do: its task cards, what the model says
// between them, and the answer at its end, with the feedback buttons.
import { KeyedQueue } from '../chat/keyed-queue.js';
import { markingDelivered } from '../chat/delivery-marks.js';
import type { AgentEvent } from '../../core/events.js';
import { mainDocumentPath } from '../../core/store.js';
import type { SessionRecord } from '../../core/store.js';
import { AnswerStreams, closingText, endsModelCall, streamKey, type AnswerStream } from '../chat/answer-stream.js';
import type { OutboxEntry } from '../chat/outbox.js';
import { budgetNoteText, errorNoteText, inheritedNoteText, memoryNoteLine, resetNoteLine, stepLimitNoteText } from '../chat/notes.js';
import { applyRunEvent, runIndicatorText, runLoadingMessages, startRunStatus, type RunStatus } from '../chat/run-status.js';
import { untilStored } from '../chat/storage-retry.js';
import { memoryNote, resetNote, runCard, type Json } from './message-views.js';
import { approvalCard, decidedApprovalCard } from './approval-views.js';
import { teamField, type SlackDelivery } from './deliver.js';
import { slackAnswerParts } from './slack-text.js';
import { streamOperations } from './stream-delivery.js';
import type { TaskDisplayMode } from './task-cards.js';
import { saidInTasks, stopTasks, taskCard, tasksKey, type RunTasks, type TaskStreamHost } from './task-stream.js';
import { slackMessageLimit } from './inbound.js';
import { mentionPrefix, slackPlatform, type SlackContext } from './context.js';
import { SteerReactions } from './steer-reactions.js';
import type { ChatRenderer } from '../chat/chat-adapter.js';

/** One run's card, with its task stream (task-stream.ts). */
interface Card extends RunTasks {
  session: SessionRecord;
  status: RunStatus;
  updates: number;
  lastFlushAt: number;
  timer: NodeJS.Timeout | null;
  /** The status last sent (text and loading messages), so assistant.threads.setStatus is only called on a change. */
  indicator: string;
}

/** Minimum time between two edits of a card (ms). */
const cardIntervalMs = 1_000;
/** How long an ended run's card stays editable by pause/resume events (ms). */
const cardRetentionMs = 60 * 60_000;
/** Room for the streamed text in one message (the final answer's first part may be a little longer). */
const streamChars = slackMessageLimit - 100;
/** Sessions whose stream recipient (the last person who wrote) is remembered, at most. */
const recipientsKept = 10_000;

/** Turns events into outbox items; one instance per adapter. */
export class SlackRenderer implements ChatRenderer {
  /** The latest card of each session (pause and resume may come after its run ended). */
  private readonly cards = new Map<string, Card>();
  /** Per-session queues keep outbox order equal to event order. */
  private readonly posts: KeyedQueue;
  /** 👀 → ✅ on the messages people steer with. */
  private readonly reactions: SteerReactions;
  /** The answers forming now, one per session. */
  private readonly streams: AnswerStreams;
  /** Whom a session's stream is for: the last person who wrote (Slack wants a recipient outside DMs). */
  private readonly recipients = new Map<string, string>();
  /** Sessions whose run called a tool: its text goes into the run's task stream, not a stream of its own. */
  private readonly toolRuns = new Set<string>();
  /** What a run's task stream needs of this renderer. */
  private readonly tasks: TaskStreamHost;
  /** Renders an event; what it took is no longer owed (R17). */
  private readonly deliver = markingDelivered((event) => this.render(event), (event) => this.context.agent.delivered(event));

  constructor(
    private readonly context: SlackContext,
    private readonly delivery: SlackDelivery,
    private readonly now: () => number = Date.now,
    streamIntervalMs = 1_000,
    /** How Slack lays out a run's task cards (SLACK_TASK_DISPLAY). */
    taskDisplay: TaskDisplayMode = 'timeline',
  ) {
    this.tasks = {
      enqueue: (entry) => context.outbox.enqueue(entry), entry: (...args) => this.entry(...args),
      recipient: (sessionId) => this.recipients.get(sessionId), display: taskDisplay, saidChars: streamChars,
    };
    this.posts = new KeyedQueue((error, sessionId) => context.log.error({ err: error, sessionId }, 'slack-card-update-failed'));
    this.streams = new AnswerStreams({
      maxChars: streamChars, intervalMs: streamIntervalMs, now,
      schedule: (sessionId, write) => this.queue(sessionId, write),
      write: (stream, first) => this.writeStream(stream, first),
    });
    this.reactions = new SteerReactions({
      outbox: context.outbox,
      entry: (session, key, operation, payload) => this.entry(session, key, operation, payload),
      queue: (sessionId, work) => this.queue(sessionId, work),
    });
  }

  /** The EventBus listener. */
  handle(event: AgentEvent): void {
    if (event.session.platform !== 'slack') return;
    if (event.type === 'run-start' || event.type === 'run-end') this.toolRuns.delete(event.session.id);
    if (event.type === 'tool-call-start') this.toolRuns.add(event.session.id);
    // Deltas are coalesced here, synchronously: nothing is queued or stored per token. After a
    // tool call the text lands in the run's task stream whole (an append cannot be taken back).
    if (event.type === 'text-delta') return this.toolRuns.has(event.session.id) ? undefined : this.streams.delta(event);
    const ended = endsModelCall(event) ? this.streams.end(event.session.id) : null;
    const endedAt = this.now();
    // Events arrive here at once, renders run later in order: a steer already taken when its
    // steer-received renders gets ✅ only (under load that saves two reactions per message).
    if (event.type === 'steer-taken') for (const steer of event.steers) this.reactions.takenSeen(steer.platformMessageKey);
    if (event.type === 'steer-taken') this.rememberRecipient(event.session.id, event.steers.at(-1)?.authorId);
    if (event.type === 'steer-received') this.rememberRecipient(event.session.id, event.steer.authorId);
    this.queue(event.session.id, async () => {
      if (ended && event.type !== 'answer') await this.closeStream(ended, event, endedAt);
      const card = this.cards.get(event.session.id);
      if (!ended && event.type === 'assistant-message' && card) await saidInTasks(this.tasks, card, event);
      await this.deliver(event);
    });
  }

  /** Flushes pending card edits and 👀, and waits until every event seen so far is in the outbox. */
  async settle(): Promise<void> {
    this.streams.flushAll();
    this.reactions.flush();
    for (const card of this.cards.values()) {
      if (card.timer) {
        clearTimeout(card.timer);
        card.timer = null;
        this.queue(card.session.id, () => this.flushCard(card));
      }
    }
    await this.posts.idle();
  }

  // biome-ignore lint/suspicious/noConfusingVoidType: a render that returns nothing took the event; only false leaves it owed
  private async render(event: AgentEvent): Promise<boolean | void> {
    const { session } = event;
    switch (event.type) {
      case 'run-start':
        return this.startCard(session);
      case 'steer-received':
        return this.reactions.received(session, event.steer);
      case 'steer-taken':
        return this.reactions.taken(session, event.steers);
      case 'answer':
        // A fenced answer (this replica lost the session) is not taken: the lease holder re-sends it.
        return this.answer(session, event);
      case 'error':
        this.updateCard(event);
        return this.post(session, `error:${session.id}:${this.now()}`, { markdown: errorNoteText(event.error, `${mentionPrefix} resume`) });
      case 'budget':
        // Core tells once per cap and level; the key makes a repeat after a crash harmless.
        return this.post(session, `budget:${session.id}:${event.level}:${event.scope}:${event.capUsd}:${event.period}`, { markdown: budgetNoteText(event, `${mentionPrefix} budget 5`) });
      case 'step-limit':
        // R21: keyed by the session's step count, so the note emitted again after a crash is this one (R17).
        return this.post(session, `steps:${session.id}:${event.sessionSteps}`, { markdown: stepLimitNoteText(event, `${mentionPrefix} resume`) });
      case 'memory-inherited':
        return this.post(session, `inherited:${event.segmentId}`, { markdown: inheritedNoteText(event, `${mentionPrefix} memory`) });
      case 'tool-call-start':
      case 'tool-call-end':
        this.updateCard(event);
        return this.withCard(session, (card) => taskCard(this.tasks, card, event));
      case 'run-end':
        this.updateCard(event);
        return this.withCard(session, (card) => stopTasks(this.tasks, card, session));
      case 'approval-requested':
        // R23: keyed by the approval: emitted again after a restart, it is the same card.
        this.updateCard(event);
        return this.post(session, `approval:${event.approval.id}`, { ...approvalCard(event.approval, event.destructive) });
      case 'approval-decided':
        this.updateCard(event);
        await this.context.outbox.enqueue(this.entry(session, `approval:${event.approval.id}:decided`, 'update', {
          channel: session.channelId, ...decidedApprovalCard(event.approval),
        }, { targetKey: `approval:${event.approval.id}` }));
        return;
      case 'memory-updated':
        return this.memoryUpdated(event);
      case 'context-reset':
        return this.contextReset(event);
      default:
        return this.updateCard(event);
    }
  }

  private async startCard(session: SessionRecord): Promise<void> {
    const previous = this.cards.get(session.id);
    if (previous?.timer) {
      clearTimeout(previous.timer);
      await this.flushCard(previous);
    }
    const now = this.now();
    this.forgetOldCards(now);
    // The start time makes the key unique across restarts and replicas (a counter would not be).
    const card: Card = { key: `card:${session.id}:${now}`, session, status: startRunStatus(now), updates: 0, lastFlushAt: now, timer: null, indicator: '', tasks: false, said: '' };
    this.cards.set(session.id, card);
    await this.post(session, card.key, await this.cardBody(card));
    this.indicate(card);
  }

  /** Cards of runs that ended long ago will not change again; dropping them bounds memory. */
  private forgetOldCards(now: number): void {
    for (const [sessionId, card] of this.cards) {
      if (!card.timer && card.status.endedAt !== null && now - card.status.endedAt > cardRetentionMs) this.cards.delete(sessionId);
    }
  }

  private updateCard(event: AgentEvent): void {
    const card = this.cards.get(event.session.id);
    if (!card) return;
    const status = applyRunEvent(card.status, event, this.now());
    if (status === card.status) return;
    card.status = status;
    card.session = event.session;
    if (card.timer) return; // an edit is already scheduled and will show the latest state
    const wait = Math.max(0, card.lastFlushAt + cardIntervalMs - this.now());
    card.timer = setTimeout(() => {
      card.timer = null;
      this.queue(card.session.id, () => this.flushCard(card));
    }, wait);
    card.timer.unref();
  }

  private async flushCard(card: Card): Promise<void> {
    card.lastFlushAt = this.now();
    card.updates += 1;
    const body = await this.cardBody(card);
    await this.context.outbox.enqueue(this.entry(card.session, `${card.key}:u${card.updates}`, 'update', body, { targetKey: card.key, replacesPending: true }));
    this.indicate(card);
  }

  /** The card's message body, with the context use of the live runner (no database round trip). */
  private async cardBody(card: Card): Promise<{ [key: string]: Json }> {
    const runner = await this.context.agent.runners.peek(card.session.id).catch(() => undefined);
    if (runner) {
      const tokens = runner.context.nextCallTokens();
      const contextPercent = Math.round((tokens * 1000) / this.context.agent.deps.settings.contextWindow) / 10;
      card.status = { ...card.status, contextPercent };
    }
    return { channel: card.session.channelId, ...runCard(card.status, card.session.id, this.now()) };
  }

  /** Mirrors the card in the thread's status (what runs now), on changes only. */
  private indicate(card: Card): void {
    const text = runIndicatorText(card.status);
    const loading = text === '' ? [] : runLoadingMessages(card.status);
    const indicator = JSON.stringify([text, loading]);
    if (indicator === card.indicator) return;
    // Nothing was shown yet: no need to clear it.
    if (card.indicator === '' && text === '') return;
    card.indicator = indicator;
    this.context.background.run('slack-thread-status', () => this.delivery.setThreadStatus(card.session.workspaceId, card.session.channelId, card.session.threadKey, text, loading));
  }

  /**
   * Enqueues the parts of an answer; false when the write was fenced off. The first part replaces
   * the message its position streamed into, if any (after a crash too: the key says which), and
   * makes the stream's pending edits pointless; the others are new replies.
   */
  private async answer(session: SessionRecord, event: Extract<AgentEvent, { type: 'answer' }>): Promise<boolean> {
    if (event.text.trim() === '') return true;
    const parts = slackAnswerParts(event.text, slackMessageLimit);
    const fence = event.fencingToken === null ? {} : { fencingToken: BigInt(event.fencingToken) };
    const stream = streamKey('', event.segmentId, event.seq);
    // A run that called tools ends its task stream with the answer (stream-delivery.ts).
    const card = this.cards.get(session.id);
    const tasks = card?.tasks ? tasksKey(card) : null;
    for (const [index, part] of parts.entries()) {
      const key = `answer:${event.segmentId}:${event.seq}:${index + 1}`;
      // The answer's last message carries its feedback buttons (one set per answer, however it goes).
      const payload = { channel: session.channelId, thread_ts: session.threadKey, markdown: part, ...(index === parts.length - 1 ? { feedback: true } : {}) };
      const first = tasks !== null
        ? this.entry(session, key, streamOperations.tasksAnswer, payload, { ...fence, targetKey: tasks })
        : this.entry(session, key, streamOperations.finish, payload, { ...fence, targetKey: stream, supersedes: [streamOperations.update], supersedesUntriedTarget: true });
      const result = await this.context.outbox.enqueue(index === 0 ? first : this.entry(session, key, 'post', payload, fence));
      if (result.fenced) return false;
    }
    // Files the answer sends follow its text, keyed by the call that asked (never sent twice).
    for (const file of event.files) {
      const payload = { channel: session.channelId, thread_ts: session.threadKey, sessionId: session.id, path: file.path };
      if ((await this.context.outbox.enqueue(this.entry(session, `upload:${session.id}:${file.callId}`, 'upload', payload, fence))).fenced) return false;
    }
    return true;
  }

  /** One write of a forming answer: its message is started once, then edited. */
  private async writeStream(stream: AnswerStream, first: boolean): Promise<void> {
    const { session } = stream;
    const key = streamKey('', stream.segmentId, stream.seq);
    if (first) {
      const recipient = this.recipients.get(session.id);
      const start = { channel: session.channelId, thread_ts: session.threadKey, markdown: stream.text, ...(recipient ? { recipient_user_id: recipient, recipient_team_id: session.workspaceId } : {}) };
      if ((await this.context.outbox.enqueue(this.entry(session, key, streamOperations.start, start))).inserted) return;
      // This position streamed before (a failed call, a crashed process): that message shows this call's text now.
    }
    await this.context.outbox.enqueue(this.entry(session, `${key}:u${this.now()}`, streamOperations.update, { channel: session.channelId, markdown: stream.text }, { targetKey: key, replacesPending: true }));
  }

  /**
   * A streamed call that did not end in an answer: its message keeps the text it showed, finished
   * (tool calls: what the model said before them; a failure or a Stop: with a note saying so).
   */
  private async closeStream(stream: AnswerStream, event: AgentEvent, endedAt: number): Promise<void> {
    const text = closingText(stream, event, streamChars);
    const key = streamKey('', stream.segmentId, stream.seq);
    await this.context.outbox.enqueue(this.entry(stream.session, `${key}:close:${endedAt}`, streamOperations.close, { channel: stream.session.channelId, markdown: text }, {
      targetKey: key, supersedes: [streamOperations.update],
    }));
  }

  private async withCard(session: SessionRecord, work: (card: Card) => Promise<void>): Promise<void> {
    const card = this.cards.get(session.id);
    if (card) await work(card);
  }

  private rememberRecipient(sessionId: string, userId: string | undefined): void {
    if (!userId) return;
    this.recipients.delete(sessionId);
    this.recipients.set(sessionId, userId);
    if (this.recipients.size > recipientsKept) this.recipients.delete(this.recipients.keys().next().value ?? sessionId);
  }

  private async memoryUpdated(event: Extract<AgentEvent, { type: 'memory-updated' }>): Promise<void> {
    // A run a person asked for that changed nothing: the line alone (nothing to view or revert).
    if (event.changes.length === 0) return this.post(event.session, `note:${event.memoryRunId}`, { markdown: memoryNoteLine(event) });
    const versions = event.changes.map((change) => ({ path: change.path, documentId: change.documentId, version: change.version, previousVersion: change.previousVersion }));
    await this.post(event.session, `note:${event.memoryRunId}`, {
      ...memoryNote(memoryNoteLine(event), event.memoryRunId),
      metadata: { event_type: 'hippo_memory_updated', event_payload: { memoryRunId: event.memoryRunId, round: event.round, versions } },
    });
  }

  private async contextReset(event: Extract<AgentEvent, { type: 'context-reset' }>): Promise<void> {
    const { session } = event;
    // The new context read MAIN.md just now; remember which version, for the View button.
    const main = await this.context.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: mainDocumentPath });
    const ref = {
      sessionId: session.id, segmentOrdinal: event.segmentOrdinal, carriedMessages: event.carriedMessages,
      tokensBefore: event.tokensBefore, tokensAfter: event.tokensAfter, mainDocumentId: main?.id ?? null, mainVersion: main?.version ?? null,
    };
    await this.post(session, `reset:${event.segmentId}`, {
      ...resetNote(resetNoteLine(event), ref),
      metadata: { event_type: 'hippo_context_reset', event_payload: { segmentId: event.segmentId, ...ref } },
    });
  }

  private async post(session: SessionRecord, key: string, body: { [key: string]: Json }): Promise<void> {
    await this.context.outbox.enqueue(this.entry(session, key, 'post', { channel: session.channelId, thread_ts: session.threadKey, ...body }));
  }

  private entry(session: SessionRecord, key: string, operation: string, payload: { [key: string]: Json }, extra: Partial<OutboxEntry> = {}): OutboxEntry {
    // The workspace goes with the item: the sender (any replica, any time later) uses its token.
    return { idempotencyKey: key, sessionId: session.id, platform: slackPlatform, operation, payload: { [teamField]: session.workspaceId, ...payload }, ...extra };
  }

  private queue(sessionId: string, work: () => Promise<void>): void {
    void this.posts.post(sessionId, () => untilStored(work, this.context.log, { sessionId }));
  }
}
