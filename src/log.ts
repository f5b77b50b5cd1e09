// Structured logging with pino. Secrets never reach the log: known secret fields are redacted
// wherever they appear, and the config is never logged whole. Text is scanned too, as the line is
// written: a provider's error message may quote the key it was sent (a proxy that echoes the
// request), so the values of the configured secrets and anything shaped like a key or a bearer
// token are replaced in every line, whatever field (message, error, stack) carries them.
import { pino, type Logger } from 'pino';

export type { Logger };

const secretPaths = [
  'token', 'apiKey', 'api_key', 'authorization', 'password', 'secret', 'signingSecret',
  'botToken', 'botRefreshToken', 'refreshToken', 'access_token', 'refresh_token', 'client_secret', 'clientSecret',
  'OPENAI_API_KEY', 'SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_APP_TOKEN', 'DISCORD_BOT_TOKEN', 'DATABASE_URL',
  'SLACK_CLIENT_SECRET', 'SLACK_STATE_SECRET', 'SLACK_TOKEN_ENCRYPTION_KEY', 'ANTHROPIC_API_KEY', 'METRICS_TOKEN',
];

/** Settings of createLogger. */
export interface LoggerOptions {
  /** Secret values to replace wherever they appear in a line (knownSecrets(config)). */
  secrets?: readonly string[];
}

/** Creates the process logger (JSON lines on stdout, or `destination`). */
export function createLogger(level: string, destination?: pino.DestinationStream, options: LoggerOptions = {}): Logger {
  const redact = {
    paths: [...secretPaths, ...secretPaths.map((path) => `*.${path}`), 'headers.authorization', '*.headers.authorization', 'headers["x-api-key"]', '*.headers["x-api-key"]'],
    censor: '[redacted]',
  };
  const secrets = options.secrets ?? [];
  const hooks = { streamWrite: (line: string) => redactSecrets(line, secrets) };
  return destination ? pino({ level, redact, hooks }, destination) : pino({ level, redact, hooks });
}

/** Shortest configured value treated as a secret in text (shorter ones would replace common words). */
const MIN_SECRET_LENGTH = 8;

/** The values of the secret settings in `settings` (the config), for LoggerOptions.secrets. */
export function knownSecrets(settings: Readonly<Record<string, unknown>>): string[] {
  const values = secretPaths.map((name) => settings[name]).filter((value): value is string => typeof value === 'string' && value.length >= MIN_SECRET_LENGTH);
  return [...new Set(values)];
}

const CENSOR = '[redacted]';

/**
 * Key- and token-shaped text, each a bounded pattern (linear time over any text): OpenAI and
 * Anthropic keys (sk-…), Slack tokens (xox?-…), a bearer token, and the value (8 characters or
 * more, with a digit) after an x-api-key or api_key name (a header, a JSON field or a query
 * parameter, JSON-escaped or not).
 */
const SECRET_PATTERNS: ReadonlyArray<[RegExp, string | ((match: string, ...groups: string[]) => string)]> = [
  [/(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{8,}/g, CENSOR],
  [/(?<![A-Za-z0-9])xox[a-z]-[A-Za-z0-9-]{8,}/g, CENSOR],
  [/\b(bearer)[ \t]+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${CENSOR}`],
  // The whole value is taken first (one pass), then kept unless it looks like a key: 8 or more
  // characters with a digit, so "invalid x-api-key: check ANTHROPIC_API_KEY" stays as it is.
  [/(x-api-key|api[-_]?key)([\\"' \t]*[:=][\\"' \t]*)([^\s"'\\,;&}]+)/gi, (match, name = '', separator = '', value = '') => (value.length >= 8 && /\d/.test(value) ? `${name}${separator}${CENSOR}` : match)],
];

/** `text` with the `known` secret values and key-shaped text replaced by [redacted]. */
export function redactSecrets(text: string, known: readonly string[] = []): string {
  let result = text;
  for (const secret of known) if (secret.length >= MIN_SECRET_LENGTH && result.includes(secret)) result = result.split(secret).join(CENSOR);
  for (const [pattern, replacement] of SECRET_PATTERNS) result = typeof replacement === 'string' ? result.replace(pattern, replacement) : result.replace(pattern, replacement);
  return result;
}

/** Removes the password from a connection string before it is shown. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '[unparseable url]';
  }
}
