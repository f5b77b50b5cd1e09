// Which database failures are transient (a dropped connection, a failover, a server that is
// restarting, a serialization conflict), and the wrapper that turns every failure of a store into
// core's StorageError, so core can retry the transient ones without knowing Prisma or pg.
import { HippoError, StorageError } from '../../core/errors.js';

/** SQLSTATEs that a later attempt may not meet. */
const transientStates = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '53300', // too_many_connections
  '57P01', // admin_shutdown (pg_terminate_backend, a failover)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
]);

/** Driver adapter error kinds (Prisma's @prisma/adapter-pg mapping) that are transient. */
const transientKinds = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'TransactionWriteConflict']);

/** Prisma error codes that are transient (unreachable, timed out, pool exhausted, conflict). */
const transientPrismaCodes = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2034']);

/** Messages of pg and Node network errors that carry no code but mean "the connection is gone". */
const transientMessage = /connection terminated|terminating connection|connection error|not queryable|timeout exceeded when trying to connect|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|socket hang up|not currently accepting connections|the database system is (starting up|shutting down|in recovery mode)|Transaction already closed|Transaction not found/i;

interface ErrorRecord {
  code?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  message?: unknown;
  meta?: unknown;
  cause?: unknown;
}

/** The error and the errors it carries: the cause chain and Prisma's driver-adapter metadata hold the driver's own. */
function* chainOf(error: unknown): Generator<ErrorRecord> {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current && typeof current === 'object' && !seen.has(current); ) {
    seen.add(current);
    const record = current as ErrorRecord;
    yield record;
    const adapterError = (record.meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError;
    current = adapterError ?? record.cause;
  }
}

/** The SQLSTATE or Prisma codes an error carries itself. */
function codesOf(record: ErrorRecord): string[] {
  return [record.code, record.originalCode].filter((value): value is string => typeof value === 'string');
}

/** True when trying the same statement again later may succeed. */
export function isTransientDatabaseError(error: unknown): boolean {
  for (const record of chainOf(error)) {
    if (codesOf(record).some((code) => transientStates.has(code) || code.startsWith('08') || transientPrismaCodes.has(code))) return true;
    if (typeof record.kind === 'string' && transientKinds.has(record.kind)) return true;
    if (typeof record.message === 'string' && transientMessage.test(record.message)) return true;
  }
  return false;
}

/** True when the error (or one it carries) has Postgres's SQLSTATE `state`. */
export function hasSqlState(error: unknown, state: string): boolean {
  for (const record of chainOf(error)) if (codesOf(record).includes(state)) return true;
  return false;
}

/** True for a deadlock or a serialization conflict: the statement met another, the database is there. */
export function isWriteConflict(error: unknown): boolean {
  for (const record of chainOf(error)) if (codesOf(record).some((code) => code === '40001' || code === '40P01')) return true;
  return false;
}

/** A store failure as core sees it; core's own errors (a lost compare-and-set, …) pass unchanged. */
export function toStorageError(error: unknown): unknown {
  if (error instanceof HippoError) return error;
  const message = error instanceof Error ? firstLine(error.message) : String(error);
  return new StorageError(`database: ${message}`, isTransientDatabaseError(error), { cause: error });
}

/** Wraps every method of a store so that its failures reach core as StorageError. */
export function guardStore<T extends object>(store: T): T {
  const guarded: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(store)) {
    guarded[name] = typeof value === 'function'
      ? async (...args: unknown[]) => {
          try {
            return await (value as (...parameters: unknown[]) => Promise<unknown>).apply(store, args);
          } catch (error) {
            throw toStorageError(error);
          }
        }
      : value;
  }
  // The same methods with the same signatures, only their errors are mapped.
  return guarded as T;
}

/** Prisma's messages start with the invocation's source frame; the last line says what failed. */
function firstLine(message: string): string {
  const lines = message.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  const specific = lines.findLast((line) => /code|error|failed|connect/i.test(line)) ?? lines.at(-1) ?? message;
  return specific.length > 300 ? `${specific.slice(0, 300)}…` : specific;
}
