import { describe, expect, it } from 'vitest';
import { boltLogger, scrubSecrets } from '../../src/adapters/slack/bolt-logger.js';
import { createLogger } from '../../src/log.js';

function sink(): { lines: string[]; stream: { write(line: string): void } } {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
}

describe('Bolt logger', () => {
  it('writes Bolt lines at pino level without Slack tokens or secret fields', () => {
    const { lines, stream } = sink();
    const logger = boltLogger(createLogger('info', stream));
    logger.info('posting with', 'xoxb-123-456-abc', { client_secret: 's3cret', channel: 'C1' });
    logger.debug('not written at info');
    expect(lines).toHaveLength(1);
    const { msg } = JSON.parse(lines[0]!) as { msg: string };
    expect(msg).toBe('posting with [redacted] {"client_secret":"[redacted]","channel":"C1"}');
    expect(scrubSecrets('xoxe.xoxb-1-abc and xapp-1-A')).toBe('[redacted] and [redacted]');
  });

  it('does not format a line pino would not write (the Web API client logs every request at debug)', () => {
    const { lines, stream } = sink();
    const logger = boltLogger(createLogger('info', stream));
    let formatted = 0;
    const body = { toJSON: () => ((formatted += 1), { big: 'request body' }) };
    logger.debug('http request', body);
    expect(formatted).toBe(0);
    expect(lines).toHaveLength(0);
    // At debug it is written, scrubbed.
    const verbose = boltLogger(createLogger('debug', stream));
    verbose.debug('http request', body);
    expect(formatted).toBe(1);
    expect(lines).toHaveLength(1);
  });
});
