// The logger core writes to: a subset of pino's API, so core does not depend on pino itself.

/** Structured logger: `log.info({ sessionId }, 'run-start')`. */
export interface Log {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
  child(fields: object): Log;
}
