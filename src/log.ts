// Structured logging with pino. Secrets never reach the log: known secret fields are redacted
// wherever they appear, and the config is never logged whole.
import { pino, type Logger } from 'pino';

export type { Logger };

const secretPaths = [
  'token', 'apiKey', 'api_key', 'authorization', 'password', 'secret', 'signingSecret',
  'botToken', 'botRefreshToken', 'refreshToken', 'access_token', 'refresh_token', 'client_secret', 'clientSecret',
  'OPENAI_API_KEY', 'SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_APP_TOKEN', 'DISCORD_BOT_TOKEN', 'DATABASE_URL',
  'SLACK_CLIENT_SECRET', 'SLACK_STATE_SECRET', 'SLACK_TOKEN_ENCRYPTION_KEY', 'ANTHROPIC_API_KEY', 'METRICS_TOKEN',
];

/** Creates the process logger (JSON lines on stdout, or `destination`). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const redact = {
    paths: [...secretPaths, ...secretPaths.map((path) => `*.${path}`), 'headers.authorization', '*.headers.authorization', 'headers["x-api-key"]', '*.headers["x-api-key"]'],
    censor: '[redacted]',
  };
  return destination ? pino({ level, redact }, destination) : pino({ level, redact });
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
