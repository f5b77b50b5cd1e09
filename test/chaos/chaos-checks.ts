// The verdict of a chaos run, from the fake servers' records and the database: every message
// reached the model exactly once, every answer was posted exactly once, no session had two worker
// model requests at the same time, and nothing was left behind.
import type { FakeSlackMessage } from '../fakes/fake-slack-api.js';
import { markdownOf } from '../fakes/fake-slack-api.js';
import type { RecordedRequest } from '../fakes/fake-model-server.js';
import { isWorkerRequest } from './chaos-model.js';
import type { ChaosDatabase, QuietState } from './chaos-database.js';
import { renderedSteer, type ChaosPlan } from './chaos-plan.js';

/** The figures of the checks; every "problem" figure is 0 in a good run. */
export interface CheckFigures {
  /** Mentions + steers sent, and how many the Events API acknowledged. */
  messagesSent: number;
  messagesAcknowledged: number;
  /** Acknowledged messages with exactly one stored steer, taken. */
  messagesStored: number;
  /** Acknowledged messages found exactly once in their session's last worker request. */
  messagesInModelOnce: number;
  /** Acknowledged messages missing from the store or from the last worker request. */
  messageLosses: number;
  /** Messages that appear more than once in one model request. */
  messageDuplicates: number;
  /** Messages the model saw under the author's user id: the name lookup timed out (not a loss). */
  nameFallbacks: number;
  /** From a message's acknowledgement to the first model request that contained it (ms). */
  steerDelayMs: Spread;
  /** From the model's final answer to its post in the thread (ms). */
  answerDelayMs: Spread;
  modelRequests: number;
  workerRequests: number;
  /** Final answers stored / posted exactly once / never posted / posted more than once. */
  answersStored: number;
  answersPostedOnce: number;
  answerLosses: number;
  answerDuplicates: number;
  /** Any post (cards, notes, answers) whose idempotency key reached Slack more than once. */
  duplicatePosts: number;
  /** Error notes posted in threads: a run failed (a warning, not one of the promises checked). */
  errorNotes: number;
  /** Pairs of worker requests of one session that overlapped in time. */
  overlaps: number;
  /** Requests the fake model never saw end. */
  unfinishedRequests: number;
  leftovers: QuietState;
  outboxFailed: number;
  modelCallErrors: number;
}

/** Median and slowest of a set of durations (ms). */
export interface Spread {
  median: number;
  max: number;
}

/** Figures plus one line per problem found (capped per kind). */
export interface CheckResult {
  figures: CheckFigures;
  problems: string[];
}

/** Everything the checks read. */
export interface CheckInputs {
  plan: ChaosPlan;
  requests: readonly RecordedRequest[];
  posts: readonly FakeSlackMessage[];
  database: Pick<ChaosDatabase, 'sessionsByThread' | 'steers' | 'answers' | 'quiet' | 'failedOutboxItems' | 'modelCallErrors'>;
  teamId: string;
}

const problemsPerKind = 10;

/** Runs every check. */
export async function checkChaosRun(inputs: CheckInputs): Promise<CheckResult> {
  const problems = new ProblemList();
  const workerRequests = inputs.requests.filter(isWorkerRequest);
  const steers = await checkSteers(inputs, workerRequests, problems);
  const answers = await checkAnswers(inputs, problems);
  const timing = checkOverlaps(workerRequests, problems);
  const leftovers = await inputs.database.quiet();
  const failed = await inputs.database.failedOutboxItems();
  for (const item of failed) problems.add('outbox-failed', `outbox item ${item.key} failed: ${item.error ?? '?'}`);
  if (leftovers.queuedSteers) problems.add('leftover', `${leftovers.queuedSteers} steer messages still queued`);
  if (leftovers.outboxOpen) problems.add('leftover', `${leftovers.outboxOpen} outbox items still pending or sending`);
  if (leftovers.leasesHeld) problems.add('leftover', `${leftovers.leasesHeld} session leases still held`);
  if (leftovers.unsettledSessions) problems.add('leftover', `${leftovers.unsettledSessions} sessions do not end in a final answer`);
  if (leftovers.awaitingDelivery) problems.add('leftover', `${leftovers.awaitingDelivery} answers/notes still marked awaiting delivery`);
  return {
    figures: {
      ...steers,
      modelRequests: inputs.requests.length,
      workerRequests: workerRequests.length,
      ...answers,
      ...timing,
      leftovers,
      outboxFailed: failed.length,
      modelCallErrors: await inputs.database.modelCallErrors(),
    },
    problems: problems.lines(),
  };
}

/**
 * Each acknowledged message: one stored steer, taken, and exactly once in the last worker request
 * of its session that contains it (a reset may leave it out of later contexts, where memory holds
 * it instead); lost when no worker request ever contained it.
 */
async function checkSteers(inputs: CheckInputs, workerRequests: RecordedRequest[], problems: ProblemList) {
  const sessions = await inputs.database.sessionsByThread();
  const stored = new Map((await inputs.database.steers()).map((steer) => [steer.platformMessageKey, steer]));
  const requestsOf = new Map<string, RecordedRequest[]>();
  for (const request of workerRequests) {
    const key = request.body.prompt_cache_key ?? '';
    requestsOf.set(key, [...(requestsOf.get(key) ?? []), request]);
  }
  const messages = inputs.plan.messages();
  let acknowledged = 0;
  let storedOnce = 0;
  let inModelOnce = 0;
  let losses = 0;
  let nameFallbacks = 0;
  const delays: number[] = [];
  for (const { session, message } of messages) {
    if (!message.acknowledged) continue;
    acknowledged += 1;
    const sessionId = sessions.get(`${session.channel}:${session.mention.ts}`);
    const steer = stored.get(`slack:${inputs.teamId}:${session.channel}:${message.ts}`);
    if (steer && steer.sessionId === sessionId && steer.status === 'taken') storedOnce += 1;
    else problems.add('steer-store', `message ${message.tag}: ${steer ? `stored with status ${steer.status}` : 'not stored'}${sessionId ? '' : ' (no session)'}`);
    const mentions = (request: RecordedRequest) => request.body.messages.filter((entry) => entry['role'] === 'user' && typeof entry['content'] === 'string' && entry['content'].includes(`[${message.tag}]`));
    const containing = (sessionId ? requestsOf.get(sessionId) ?? [] : []).filter((request) => mentions(request).length > 0);
    const request = containing.at(-1);
    const seen = request ? mentions(request) : [];
    const count = seen.length;
    if (containing[0] && message.acknowledgedAt !== undefined) delays.push(Math.max(0, containing[0].receivedAt - message.acknowledgedAt));
    // Quoted with the author's name; under load the name lookup may time out and use the user id.
    const content = String(seen[0]?.['content'] ?? '');
    const rendered = content === renderedSteer(message) || content === renderedSteer({ ...message, author: { ...message.author, name: message.author.id } });
    if (count === 1 && content !== renderedSteer(message)) nameFallbacks += 1;
    if (count === 1 && !rendered) problems.add('steer-render', `message ${message.tag} reached the model as ${JSON.stringify(content)}`);
    if (count === 1) inModelOnce += 1;
    else {
      losses += count === 0 ? 1 : 0;
      problems.add('steer-model', `message ${message.tag}: ${count} times in the last worker request of its session that has it (request ${request?.index ?? 'none'})`);
    }
  }
  // No tag twice in any single request (any role, any request of the session).
  const tags = messages.map(({ message }) => message.tag);
  let duplicates = 0;
  for (const request of workerRequests) {
    const texts = request.body.messages.map((entry) => (typeof entry['content'] === 'string' ? entry['content'] : JSON.stringify(entry['content'] ?? '')));
    for (const tag of tags) {
      const marker = `[${tag}]`;
      const times = texts.filter((text) => text.includes(marker)).length;
      if (times > 1) {
        duplicates += 1;
        problems.add('steer-duplicate', `message ${tag}: ${times} times in model request ${request.index}`);
      }
    }
  }
  return { messagesSent: messages.length, messagesAcknowledged: acknowledged, messagesStored: storedOnce, messagesInModelOnce: inModelOnce, messageLosses: losses, messageDuplicates: duplicates, nameFallbacks, steerDelayMs: spread(delays) };
}

/** Each stored final answer: posted exactly once (by idempotency key and by text). */
async function checkAnswers(inputs: CheckInputs, problems: ProblemList) {
  const byKey = countBy(inputs.posts, (post) => idempotencyKeyOf(post));
  const byText = countBy(inputs.posts, (post) => markdownOf(post) ?? post.text ?? '');
  const answers = await inputs.database.answers();
  const postedAt = new Map(inputs.posts.map((post) => [markdownOf(post) ?? post.text ?? '', post.postedAt]));
  const answeredAt = new Map(inputs.requests.map((request) => [request.index, request.respondedAt]));
  const delays: number[] = [];
  let postedOnce = 0;
  let losses = 0;
  let duplicates = 0;
  for (const answer of answers) {
    if (answer.text.trim() === '') continue; // nothing to post, by design
    const key = `answer:${answer.segmentId}:${answer.seq}:1`;
    const posts = Math.max(byKey.get(key) ?? 0, byText.get(answer.text) ?? 0);
    const index = /^Chaos answer #(\d+):/.exec(answer.text)?.[1];
    const answered = index === undefined ? undefined : answeredAt.get(Number(index));
    const posted = postedAt.get(answer.text);
    if (answered !== undefined && posted !== undefined) delays.push(Math.max(0, posted - answered));
    if (posts === 1) postedOnce += 1;
    else if (posts === 0) {
      losses += 1;
      problems.add('answer-lost', `answer ${key} ("${answer.text.slice(0, 40)}") was never posted`);
    } else {
      duplicates += posts - 1;
      problems.add('answer-duplicate', `answer ${key} posted ${posts} times`);
    }
  }
  let duplicatePosts = 0;
  for (const [key, count] of byKey) {
    if (key === '' || count < 2) continue;
    duplicatePosts += count - 1;
    problems.add('post-duplicate', `post ${key} reached Slack ${count} times`);
  }
  const errorNotes = [...byKey.keys()].filter((key) => key.startsWith('error:')).length;
  return { answersStored: answers.length, answersPostedOnce: postedOnce, answerLosses: losses, answerDuplicates: duplicates, duplicatePosts, errorNotes, answerDelayMs: spread(delays) };
}

/** Worker requests of one session (prompt_cache_key) must not overlap in [receivedAt, respondedAt]. */
function checkOverlaps(workerRequests: RecordedRequest[], problems: ProblemList) {
  const bySession = new Map<string, RecordedRequest[]>();
  for (const request of workerRequests) {
    const key = request.body.prompt_cache_key ?? '';
    bySession.set(key, [...(bySession.get(key) ?? []), request]);
  }
  let overlaps = 0;
  let unfinished = 0;
  for (const [sessionId, requests] of bySession) {
    let busyUntil = -Infinity;
    let busyWith: RecordedRequest | undefined;
    for (const request of [...requests].sort((left, right) => left.receivedAt - right.receivedAt)) {
      if (request.respondedAt === undefined) {
        unfinished += 1;
        problems.add('request-unfinished', `model request ${request.index} of session ${sessionId} never ended`);
      }
      if (request.receivedAt < busyUntil && busyWith) {
        overlaps += 1;
        problems.add('overlap', `session ${sessionId}: request ${request.index} began ${busyUntil - request.receivedAt} ms before request ${busyWith.index} ended`);
      }
      const end = request.respondedAt ?? Infinity;
      if (end > busyUntil) {
        busyUntil = end;
        busyWith = request;
      }
    }
  }
  return { overlaps, unfinishedRequests: unfinished };
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((left, right) => left - right);
  return { median: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 };
}

/** The outbox idempotency key a post carries in its Slack metadata ('' without one). */
export function idempotencyKeyOf(post: FakeSlackMessage): string {
  const key = post.metadata?.event_payload?.['idempotency_key'];
  return typeof key === 'string' ? key : '';
}

function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) {
    const key = keyOf(item);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Problem lines, at most a few per kind (with the number left out). */
class ProblemList {
  private readonly kinds = new Map<string, { lines: string[]; more: number }>();

  add(kind: string, line: string): void {
    const entry = this.kinds.get(kind) ?? { lines: [], more: 0 };
    if (entry.lines.length < problemsPerKind) entry.lines.push(`${kind}: ${line}`);
    else entry.more += 1;
    this.kinds.set(kind, entry);
  }

  lines(): string[] {
    return [...this.kinds.entries()].flatMap(([kind, entry]) => (entry.more ? [...entry.lines, `${kind}: … and ${entry.more} more`] : entry.lines));
  }
}
