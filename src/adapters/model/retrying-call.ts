// The retry loop of a streamed model call, for model clients whose SDK retries are off: an
// attempt fails when nothing arrives for `timeoutMs`; a call gives up when its answer has not
// started within `totalTimeoutMs`; transient failures are retried with backoff (or the server's
// hint) unless the attempt already showed something to the user (a retry would show it twice).
import { CancelledError, ModelError } from '../../core/errors.js';
import type { AgentRole } from '../../core/messages.js';
import type { ModelCallOptions, ModelResponse } from '../../core/model-client.js';

/** The logger calls a model client makes (a pino logger fits). */
export interface ModelClientLog {
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Attempts, timers and backoff of a call; the units are milliseconds (defaults: `retryPolicy`). */
export interface RetryPolicy {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** An attempt fails when no byte arrives for this long (default 120,000). */
  timeoutMs: number;
  /**
   * The longest a call waits for its answer to start, over all attempts and back-offs (default: no
   * limit beyond the attempts). A stream that is producing is never cut by it; only `timeoutMs` of
   * silence ends one.
   */
  totalTimeoutMs: number;
  /** First backoff delay, doubled per retry, with jitter (default 1,000). */
  baseDelayMs: number;
  /** Upper bound of a backoff delay (default 30,000). */
  maxDelayMs: number;
}

/** A client's policy from its options: 4 retries, 120 s of silence, no total budget, 1 s → 30 s backoff. */
export function retryPolicy(options: Partial<RetryPolicy>): RetryPolicy {
  return {
    maxRetries: options.maxRetries ?? 4,
    timeoutMs: options.timeoutMs ?? 120_000,
    totalTimeoutMs: options.totalTimeoutMs ?? Number.POSITIVE_INFINITY,
    baseDelayMs: options.baseDelayMs ?? 1000,
    maxDelayMs: options.maxDelayMs ?? 30_000,
  };
}

/** What went wrong with an attempt, in words for the operator. */
export interface Failure {
  message: string;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
  /** The endpoint refused the prompt as longer than the model's window (R19). */
  contextTooLong?: boolean;
  /** The endpoint refused an image of the request (R22). */
  imageRefused?: boolean;
}

/** What an attempt tells the loop while it runs. */
export interface AttemptControl {
  /** Aborted by the caller's signal or by the loop's timers. */
  signal: AbortSignal;
  /** Something arrived: restarts the silence timer (the first one ends the start budget). */
  progressed(): void;
  /** The user saw part of this answer: a failure from now on is not retried. */
  commit(): void;
}

/** Raised when an attempt's silence timer fired. */
export class AttemptTimeout extends Error {}

/** Raised when the call's total budget ran out before its answer started. */
class BudgetExhausted extends Error {}

// Server-sent retry hints beyond this are ignored in favour of our own backoff (as the SDKs do).
const maxRetryAfterMs = 60_000;

export interface RetryingCall<T> {
  policy: RetryPolicy;
  /** Host and path of the endpoint, for messages. */
  endpoint: string;
  role: AgentRole;
  signal?: AbortSignal | undefined;
  log?: ModelClientLog | undefined;
  /** One attempt; it may end quietly when its signal is aborted (the loop finds out why). */
  attempt(control: AttemptControl): Promise<T>;
  /** Describes an attempt's error (an `AttemptTimeout` included). */
  describe(error: unknown): Failure;
  /** The error thrown when the loop gives up on a failure. */
  toError(failure: Failure, cause: unknown): ModelError;
}

/** A model client as the loop needs it: its policy, its endpoint's name and its log. */
export interface RetryingClient {
  readonly policy: RetryPolicy;
  readonly endpoint: string;
  readonly log: ModelClientLog | undefined;
}

/** One model call of `client` through the loop, logged as `model-call-end` when it answers. */
export async function completeWithRetries(
  client: RetryingClient,
  options: ModelCallOptions,
  call: Pick<RetryingCall<Pick<ModelResponse, 'message' | 'usage'>>, 'attempt' | 'describe' | 'toError'>,
): Promise<ModelResponse> {
  const { value, attempts, latencyMs } = await callWithRetries({
    policy: client.policy, endpoint: client.endpoint, role: options.role, signal: options.signal, log: client.log, ...call,
  });
  client.log?.debug({ role: options.role, attempts, latencyMs, usage: value.usage }, 'model-call-end');
  return { ...value, latencyMs };
}

/** Runs attempts until one succeeds, the failure is final, or the budget is spent. */
async function callWithRetries<T>(call: RetryingCall<T>): Promise<{ value: T; attempts: number; latencyMs: number }> {
  const startedAt = performance.now();
  const deadline = startedAt + call.policy.totalTimeoutMs;
  const { signal, policy } = call;
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw cancelled(signal);
    const state = { started: false, committed: false };
    try {
      const value = await runAttempt(call, state, deadline);
      return { value, attempts: attempt + 1, latencyMs: Math.round(performance.now() - startedAt) };
    } catch (error) {
      if (signal?.aborted) throw cancelled(signal);
      if (error instanceof BudgetExhausted) throw outOfBudget(call, attempt + 1, `attempt ${attempt + 1} was still waiting`);
      const failure = call.describe(error);
      if (!failure.retryable || state.committed || attempt >= policy.maxRetries) throw call.toError(failure, error);
      const delayMs = failure.retryAfterMs ?? backoffMs(policy, attempt);
      // Waiting past the budget only to fail then helps nobody: give up now.
      if (performance.now() + delayMs >= deadline) throw outOfBudget(call, attempt + 1, failure.message);
      call.log?.warn({ role: call.role, attempt: attempt + 1, status: failure.status, delayMs, error: failure.message }, 'model-call-retry');
      await sleep(delayMs, signal);
    }
  }
}

async function runAttempt<T>(call: RetryingCall<T>, state: { started: boolean; committed: boolean }, deadline: number): Promise<T> {
  // One controller per attempt: the caller's abort and our timers both stop the socket.
  const controller = new AbortController();
  const forwardAbort = () => controller.abort(call.signal?.reason);
  call.signal?.addEventListener('abort', forwardAbort, { once: true });
  let timedOut: 'silence' | 'budget' | undefined;
  let timer: NodeJS.Timeout | undefined;
  let armedForSilence = false;
  // Until the answer starts, the call's total budget may be shorter than an attempt's silence;
  // after it, every event restarts the same full silence (the timer is refreshed, not remade).
  const armTimer = () => {
    if (armedForSilence) return void timer?.refresh();
    clearTimeout(timer);
    armedForSilence = state.started;
    const budgetMs = state.started ? Number.POSITIVE_INFINITY : deadline - performance.now();
    const reason = budgetMs < call.policy.timeoutMs ? 'budget' : 'silence';
    timer = setTimeout(() => {
      timedOut = reason;
      controller.abort(new AttemptTimeout());
    }, Math.max(0, Math.min(call.policy.timeoutMs, budgetMs)));
  };
  try {
    armTimer();
    const value = await call.attempt({
      signal: controller.signal,
      progressed: () => {
        state.started = true;
        armTimer();
      },
      commit: () => void (state.committed = true),
    });
    if (timedOut) throw timedOut === 'budget' ? new BudgetExhausted() : new AttemptTimeout();
    if (call.signal?.aborted) throw new Error('aborted');
    return value;
  } catch (error) {
    if (timedOut === 'budget') throw new BudgetExhausted('', { cause: error });
    throw timedOut ? new AttemptTimeout('', { cause: error }) : error;
  } finally {
    clearTimeout(timer);
    call.signal?.removeEventListener('abort', forwardAbort);
  }
}

function outOfBudget(call: RetryingCall<unknown>, attempts: number, last: string): ModelError {
  const seconds = Math.round(call.policy.totalTimeoutMs / 1000);
  return new ModelError(
    `model endpoint ${call.endpoint} gave no answer within ${seconds} s (MODEL_TOTAL_TIMEOUT_SECONDS) over ${attempts} attempt(s); last: ${last}`,
    true,
  );
}

function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(ceiling * (0.5 + Math.random() * 0.5));
}

/** The server's retry hint (`retry-after-ms`, `retry-after` in seconds or as a date), when usable. */
export function retryAfterFrom(headers: Headers | undefined): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  const header = headers?.get('retry-after') ?? '';
  const seconds = Number.parseFloat(header);
  const candidate = !Number.isNaN(milliseconds) ? milliseconds
    : !Number.isNaN(seconds) ? seconds * 1000
    : header ? Date.parse(header) - Date.now() : Number.NaN;
  return candidate >= 0 && candidate <= maxRetryAfterMs ? candidate : undefined;
}

/** Why a connection failed: the system error code under it (ECONNREFUSED, ENOTFOUND, …), else the innermost message. */
export function networkCode(error: Error): string | undefined {
  let innermost: string | undefined;
  for (let cause: unknown = error.cause, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (cause instanceof Error && cause.message) innermost = cause.message;
  }
  return innermost;
}

function cancelled(signal: AbortSignal): CancelledError {
  const reason: unknown = signal.reason;
  return new CancelledError(typeof reason === 'string' ? reason : reason instanceof Error ? reason.message : String(reason));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
