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
  // A line pino would not write is not formatted either: the Web API client logs every call's
  // request at debug, and stringifying and scrubbing those showed in the ingest's B4 profile.
  const at = (name: 'debug' | 'info' | 'warn' | 'error') => (...parts: unknown[]) => {
    if (child.isLevelEnabled(name)) child[name](text(parts));
  };
  let level = LogLevel.INFO;
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
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
