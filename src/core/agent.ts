// The agent as adapters see it: submit a person's message, send commands, read status, review
// memory (`review`), listen to events. Adapters only enqueue and render (R16); everything else
// happens in core. With the ground's ports and types this file is core's face: code outside core
// (but build-agent.ts, which wires the parts) imports nothing from core's wings
// (test/unit/core-face.test.ts); the types of what the face takes and returns are exported here.
import type { AgentDeps } from './agent-context.js';
import type { ApprovalChoice, ApprovalRecord } from './approval-store.js';
import type { AgentEvent } from './events.js';
import { MemoryReview } from './memory/memory-review.js';
import { RunnerRegistry } from './runner/runner-registry.js';
import { spendOf, type BudgetState, type Spend } from './spend.js';
import { capText, maxMessageChars } from './text-hygiene.js';
import type { RunnerState, SessionRunner } from './runner/session-runner.js';
import type { Attachment, ContextHistory, SessionRecord, SteerRecord, ThreadAddress, UsageSummary } from './store.js';

export type { MemoryReview, EditOutcome, PartEdit, PinOutcome, RevertResult, Reviewer, UndoBothOutcome, UndoOutcome } from './memory/memory-review.js';

/** A person's message in a thread. */
export interface IncomingMessage {
  address: ThreadAddress;
  /** Unique per platform message, e.g. "slack:T1:C1:1700000000.000100". */
  platformMessageKey: string;
  authorId: string;
  authorName: string;
  text: string;
  /** Files and images shared with it (fetched into the workspace when the worker takes it). */
  attachments?: Attachment[];
}

export interface SessionStatus {
  session: SessionRecord;
  state: RunnerState;
  segmentOrdinal: number;
  /** Context usage in percent of the window. */
  contextPercent: number;
  contextTokens: number;
  queued: number;
  usage: UsageSummary;
  /** Cached prompt tokens over all prompt tokens, all roles. */
  cacheRatio: number;
  /** Dollars so far by role; null when the model's prices are unknown. */
  spend: Spend | null;
  /** The session's spend cap in US dollars, or null. */
  budgetUsd: number | null;
  /**
   * R2: where the next memory checkpoint is (a summarizer and a decider fork when the context
   * reaches `percent` of the window), and how many tokens of growth that is from now.
   */
  memoryCheckpoint: { percent: number; tokensAway: number };
  /** The context's size at each worker step since the session started, with its checkpoints and resets. */
  contextHistory: ContextHistory & { window: number };
  /** R23: the session's latest tool approvals (waiting or decided: who, what, when), newest first. */
  approvals: ApprovalRecord[];
}

/** Worker steps `status` reads for the context's curve (the newest). */
const CONTEXT_HISTORY_STEPS = 2_000;

export interface SubmitOptions {
  /** Starts a session for the thread when it has none (else a message there is not stored). */
  startSession: boolean;
  title?: string;
  /** The platform event that carried the message, recorded as processed with it. */
  eventKey?: string;
}

/** Most attachments taken from one message (platforms allow about ten). */
const maxAttachments = 20;

export class Agent {
  readonly runners: RunnerRegistry;
  /** Wake-ups started by submit that have not finished (submit does not wait for them). */
  private readonly wakes = new Map<string, Promise<void>>();

  /**
   * What people do to memory (docs/product.md "Review memory"): edit, undo, pin, unpin, 👍, revert,
   * remember, forget — the one door adapters use, with ids and the person who acts.
   */
  readonly review: MemoryReview;

  constructor(readonly deps: AgentDeps) {
    this.runners = new RunnerRegistry(deps);
    this.review = new MemoryReview(deps.stores, (sessionId) => this.requestArrived(sessionId));
  }

  /**
   * Starts a session for the thread (if none) and queues the message durably before anything
   * else happens. Returns `inserted: false` for a duplicate delivery (nothing else is done).
   */
  async submit(incoming: IncomingMessage, options: SubmitOptions): Promise<{ session: SessionRecord | null; steer: SteerRecord | null; inserted: boolean }> {
    // Whatever a platform accepted is stored, cut to Slack's own limit with a visible mark (the
    // stores replace what Postgres cannot hold).
    const message = { ...incoming, text: capText(incoming.text, maxMessageChars), authorName: capText(incoming.authorName, 200) };
    // One durable write: the event, the session (found or started), the queued message.
    const { session, steer, inserted, notified } = await this.deps.stores.steers.accept({
      address: message.address,
      ...(options.startSession ? { start: { title: (options.title ?? message.text).slice(0, 80), scope: this.deps.settings.memoryScope, startedBy: message.authorId } } : {}),
      steer: {
        platformMessageKey: message.platformMessageKey,
        authorId: message.authorId,
        authorName: message.authorName,
        text: message.text,
        ...(message.attachments?.length ? { attachments: message.attachments.slice(0, maxAttachments) } : {}),
      },
      ...(options.eventKey === undefined ? {} : { eventKey: options.eventKey }),
    });
    if (!session || !steer) return { session, steer: null, inserted: false };
    if (inserted) {
      this.deps.events.emit({ type: 'steer-received', session, steer });
      // The message is durable now: the caller may acknowledge it (Slack wants its 200 fast), and
      // the wake-up runs behind. The owner (on any replica) wakes on the notification; with no
      // live owner this replica takes the lease; if this process dies first, the sweeper does.
      const wake = this.wake(session, notified)
        .catch((error: unknown) => this.deps.log.error({ sessionId: session.id, err: error }, 'steer-wake-failed'))
        .finally(() => {
          if (this.wakes.get(session.id) === wake) this.wakes.delete(session.id);
        });
      this.wakes.set(session.id, wake);
    }
    return { session, steer, inserted };
  }

  private async wake(session: SessionRecord, notified: boolean): Promise<void> {
    if (!notified) await this.deps.replica.wakeups.notify(session.id);
    // An ingest process never drives: the notification is for the workers.
    if (this.deps.replica.role === 'ingest') return;
    // The intake read the session's row in the statement that stored the message: a runner
    // loaded now starts from that row, and needs no second look at it.
    const loading = !this.runners.has(session.id);
    await (await this.runners.get(session.id, session)).steerArrived({ rowJustRead: loading });
  }

  /** The session bound to a thread, if any. */
  findSession(address: ThreadAddress): Promise<SessionRecord | null> {
    return this.deps.stores.sessions.find(address);
  }

  /** The session's runner, after any wake-up still running for it (so its state is current). */
  async runner(sessionId: string): Promise<SessionRunner> {
    await this.wakes.get(sessionId);
    return this.runners.get(sessionId);
  }

  // A person's command may arrive on a replica that does not drive the session: the flag is
  // stored, and the notification tells the driver (it re-reads the flags before its next step).

  async pause(sessionId: string): Promise<void> {
    await (await this.runner(sessionId)).pause();
    await this.deps.replica.wakeups.notify(sessionId, 'flags');
  }

  async resume(sessionId: string): Promise<void> {
    await (await this.runner(sessionId)).resume();
    await this.deps.replica.wakeups.notify(sessionId, 'flags');
  }

  /**
   * A person's Stop: the model call and tools in flight are cancelled now, on whichever replica
   * drives the session (it is told at once), and the session waits until a steer or resume.
   */
  async stopRun(sessionId: string, by: string): Promise<'stopping' | 'already-paused'> {
    const outcome = await (await this.runner(sessionId)).stopNow(by);
    if (outcome === 'stopping') await this.deps.replica.wakeups.notify(sessionId, 'flags');
    return outcome;
  }

  /** Asks for a reset now, through the same coordinator as a decider (no decider involved; the runner tells the driver). */
  async reset(sessionId: string): Promise<boolean> {
    return (await this.runner(sessionId)).requestReset(null, { byPerson: true });
  }

  /**
   * A person allowed the session to spend `usd` more (issue #16); it continues if it stopped for its
   * budget and the channel's daily cap (the operator's) does not hold it. Returns where it stands.
   */
  async raiseBudget(sessionId: string, usd: number): Promise<BudgetState> {
    const state = await (await this.runner(sessionId)).raiseBudget(usd);
    await this.deps.replica.wakeups.notify(sessionId, 'flags');
    return state;
  }

  /**
   * A remember / forget is stored (MemoryReview.remember): whichever process drives the session is
   * told. The driver (on any replica) reads it on the notification; with no live driver this
   * process takes the lease (an ingest never does: a worker takes it up); if the notification is
   * lost, the sweeper finds the pending request.
   */
  private async requestArrived(sessionId: string): Promise<void> {
    await this.deps.replica.wakeups.notify(sessionId, 'memory');
    if (this.deps.replica.role !== 'ingest') (await this.runner(sessionId)).requestsArrived();
  }

  /**
   * R23: a person's decision on a tool call that waits (the adapter checked that they may decide).
   * One conditional update decides: a second click, another replica's, or one after the timeout
   * gets the approval as it stands (`decided: false`) and changes nothing. The driver, on any
   * replica, is told; the card is updated from the event.
   */
  async decideApproval(approvalId: string, choice: ApprovalChoice, by: { id: string; name: string }, note?: string): Promise<{ decided: boolean; approval: ApprovalRecord | null }> {
    const result = await this.deps.stores.approvals.decide(approvalId, {
      status: choice === 'deny' ? 'denied' : 'approved', scope: choice === 'approve-run' ? 'run' : 'call', byId: by.id, byName: capText(by.name, 200),
      note: note?.trim() ? capText(note.trim(), 1_000) : null,
    });
    const { approval } = result;
    if (!result.decided || !approval) return result;
    this.deps.log.info({ sessionId: approval.sessionId, approvalId, tool: approval.tool, status: approval.status, scope: approval.scope, by: by.id }, 'approval-decided');
    const session = await this.deps.stores.sessions.get(approval.sessionId);
    if (session) this.deps.events.emit({ type: 'approval-decided', session, approval, first: true });
    await this.deps.replica.wakeups.notify(approval.sessionId, 'approval');
    return result;
  }

  async status(sessionId: string): Promise<SessionStatus> {
    const runner = await this.runner(sessionId);
    const [usage, totals, history, approvals] = await Promise.all([
      this.deps.stores.usage.summary(sessionId), this.deps.stores.usage.totals({ sessionId }), this.deps.stores.usage.contextHistory(sessionId, CONTEXT_HISTORY_STEPS),
      this.deps.stores.approvals.recent(sessionId, 5),
    ]);
    const spend = spendOf(totals, this.deps.settings);
    const prompt = usage.worker.promptTokens + usage.summarizer.promptTokens + usage.decider.promptTokens;
    const cached = usage.worker.cachedTokens + usage.summarizer.cachedTokens + usage.decider.cachedTokens;
    const tokens = runner.context.nextCallTokens();
    return {
      session: runner.session,
      state: runner.state,
      segmentOrdinal: runner.context.segment.ordinal,
      contextTokens: tokens,
      contextPercent: Math.round((tokens * 1000) / this.deps.settings.contextWindow) / 10,
      queued: await this.deps.stores.steers.countQueued(sessionId),
      usage,
      cacheRatio: prompt === 0 ? 0 : cached / prompt,
      spend: spend.priced || spend.total > 0 ? spend : null,
      budgetUsd: runner.session.budgetUsd ?? this.deps.settings.sessionBudgetUsd,
      memoryCheckpoint: nextCheckpoint(runner.context.segment.lastStep, tokens, this.deps.settings),
      contextHistory: { ...history, window: this.deps.settings.contextWindow },
      approvals,
    };
  }

  /** A chat adapter took an answer or note (it is in its outbox): it will not be emitted again. */
  async delivered(event: AgentEvent): Promise<void> {
    const deliveries = this.deps.stores.deliveries;
    if (event.type === 'answer') await deliveries.markAnswer(event.segmentId, event.seq);
    else if (event.type === 'memory-updated') await deliveries.markMemoryRun(event.memoryRunId);
    else if (event.type === 'context-reset') await deliveries.markReset(event.segmentId);
  }

  /** The fencing token of the lease this replica holds for the session, if any. */
  async leaseToken(sessionId: string): Promise<number | null> {
    return (await this.runners.peek(sessionId))?.lease.token ?? null;
  }

  /** Drives sessions left with backlog by a crash or restart. */
  recover(): Promise<number> {
    return this.runners.recover();
  }

  stop(graceMs?: number): Promise<void> {
    return this.runners.stop(graceMs);
  }
}

/**
 * R2: the step after the last one that fired, and the tokens still to grow before it (0: it fires
 * at the worker's next checkpoint, e.g. after a summarizer that was still running when it passed).
 */
function nextCheckpoint(lastStep: number, tokens: number, settings: { stepPercent: number; contextWindow: number }): SessionStatus['memoryCheckpoint'] {
  const percent = lastStep + settings.stepPercent;
  return { percent, tokensAway: Math.max(0, Math.ceil((percent * settings.contextWindow) / 100) - tokens) };
}
