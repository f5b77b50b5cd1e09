// Bolt and the Slack Web API client log through our pino logger, at its level, without tokens
// (pino redacts token fields; Bolt's own debug output of request bodies stays off).
import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from '../../log.js';

/** Wraps a pino logger in Bolt's Logger interface. */
export function boltLogger(log: Logger): BoltLogger {
  const child = log.child({ component: 'slack' });
  const text = (parts: unknown[]) => parts.map((part) => (part instanceof Error ? part.message : typeof part === 'string' ? part : JSON.stringify(part))).join(' ');
  let level = LogLevel.INFO;
  return {
    debug: (...parts: unknown[]) => child.debug(text(parts)),
    info: (...parts: unknown[]) => child.info(text(parts)),
    warn: (...parts: unknown[]) => child.warn(text(parts)),
    error: (...parts: unknown[]) => child.error(text(parts)),
    // pino decides what is written; Bolt only asks.
    setLevel: (next: LogLevel) => void (level = next),
    getLevel: () => level,
    setName: () => undefined,
  };
}
