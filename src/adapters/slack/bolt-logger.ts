// Bolt and the Slack Web API client log through our pino logger, at its level, without secrets:
// their messages are strings (pino's field redaction cannot reach inside), and the Web API
// client's debug lines show request bodies with only *token* keys masked — an OAuth exchange's
// client_secret would show. So every line is scrubbed of Slack tokens and secret fields first.
import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';
import type { Logger } from '../../log.js';

/** Wraps a pino logger in Bolt's Logger interface. */
export function boltLogger(log: Logger): BoltLogger {
  const child = log.child({ component: 'slack' });
  const text = (parts: unknown[]) => scrubSecrets(parts.map((part) => (part instanceof Error ? part.message : typeof part === 'string' ? part : JSON.stringify(part))).join(' '));
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

/** Slack tokens (xoxb-…, xoxe.xoxb-…, xoxe-…, xapp-…) and secret-named JSON fields, masked. */
export function scrubSecrets(line: string): string {
  return line
    .replace(/\bx(?:ox[a-z]|app)(?:\.xox[a-z])?-[A-Za-z0-9-]+/g, '[redacted]')
    .replace(/("(?:client_secret|refresh_token|access_token|code|state|token)"\s*:\s*")[^"]*/g, '$1[redacted]');
}
