// Typed errors, grouped by who must act (docs/style.md §4).

/** Base class: every Hippo error has a stable code. */
export class HippoError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The operator must fix configuration. */
export class ConfigError extends HippoError {
  constructor(message: string) {
    super('config', message);
  }
}

/** A chat platform refused or failed a call. */
export class PlatformError extends HippoError {
  constructor(
    readonly platform: string,
    readonly operation: string,
    message: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super('platform', message, options);
  }
}

/** The model call failed; `retryable` says whether trying again later may help. */
export class ModelError extends HippoError {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super('model', message, options);
  }
}

/**
 * The provider refused the request as longer than the model's window (OpenAI's
 * `context_length_exceeded`, Anthropic's "prompt is too long"). Sending it again as it is cannot
 * help; a reset and one retry can (R19).
 */
export class ContextTooLongError extends ModelError {
  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super(message, false, status, options);
  }
}

/**
 * R22: the provider refused an image of the request (too large, too many pixels, bytes that are
 * not the image they claim). `imageUrls`: the data URLs of the image parts it named (Anthropic
 * names `messages.N.content.M`); empty when it did not say which (OpenAI). Sending the request
 * again as it is cannot help; without those parts, it can (the worker retries once).
 */
export class ImageRefusedError extends ModelError {
  constructor(message: string, readonly imageUrls: readonly string[], status?: number, options?: { cause?: unknown }) {
    super(message, false, status, options);
  }
}

/** Bad tool input or a tool failure: goes back to the model as the tool result. */
export class ToolError extends HippoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('tool', message, options);
  }
}

/** A memory document write lost a compare-and-set race. */
export class ConflictError extends HippoError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/**
 * A summarizer's change would remove a line people pinned; nothing was written. The message is
 * what the model reads as its tool result.
 */
export class PinnedLineError extends HippoError {
  constructor(
    readonly path: string,
    readonly line: string,
  ) {
    super('pinned', `this would remove the pinned line '${line.length > 200 ? `${line.slice(0, 200)}…` : line}' of ${path}; keep it (people pinned it), word for word, and change only the rest`);
  }
}

/**
 * A search refused or stopped to bound its cost: too many in a row, or too slow. The message says
 * what to do; it is what the person (or the model, as its tool result) is told.
 */
export class SearchLimitError extends HippoError {
  constructor(message: string) {
    super('search-limit', message);
  }
}

/** A record core was asked to work on does not exist (a session id no row has). */
export class NotFoundError extends HippoError {
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super('not-found', `no ${kind} ${id}`);
  }
}

/**
 * Something that cannot happen did (a broken invariant, a thrown value that is no Error): a bug to
 * report, not a state anyone can act on.
 */
export class InternalError extends HippoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('internal', message, options);
  }
}

/** Work stopped because its signal was aborted; carries the abort reason. */
export class CancelledError extends HippoError {
  constructor(readonly reason: string) {
    super('cancelled', `cancelled: ${reason}`);
  }
}

/**
 * The abort reason of a person's Stop (distinct from shutdown and deadlines, docs/style.md §6): the
 * model call and tools in flight end now, and what they were doing is recorded as stopped by them.
 */
export class StopRequested extends Error {
  constructor(readonly by: string) {
    super(`stopped by ${by}`);
    this.name = 'StopRequested';
  }
}

/**
 * The abort reason of a shutdown (docs/style.md §6): a runner, or the whole registry, stops taking
 * work; what is still running ends at its next chance and is cancelled "shutdown" (or "stopping").
 */
export class ShutdownRequested extends Error {
  constructor(message: 'shutdown' | 'stopping' = 'shutdown') {
    super(message);
    this.name = 'ShutdownRequested';
  }
}

/** The abort reason of a deadline: the work ran out of its time (`limit`, as people read it) and is stopped. */
export class DeadlineReached extends Error {
  constructor(readonly limit: string) {
    super(`timed out after ${limit}`);
    this.name = 'DeadlineReached';
  }
}

/**
 * A memory run reached its step cap (R4) before it finished; the run fails with what it did so
 * far (its transcript and usage are recorded with it).
 */
export class MemoryRunCapped extends HippoError {
  constructor(role: string, readonly maxSteps: number) {
    super('memory-cap', `${role} stopped at its cap of ${maxSteps} steps`);
  }
}

/**
 * The database failed. `transient` when trying again later may help (a dropped connection, a
 * failover, a serialization conflict): work is then retried with back-off instead of given up.
 */
export class StorageError extends HippoError {
  constructor(
    message: string,
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super('storage', message, options);
  }
}

/** True for an error that a later attempt may not meet (a transient storage failure). */
export function isTransient(error: unknown): boolean {
  return error instanceof StorageError && error.transient;
}
