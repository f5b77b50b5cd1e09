// Log records at warn and above as one readable line in the terminal chat (the record itself goes
// to chat.log). A record's message is a name ("model-call-retry"), sometimes followed by the
// sentence an operator needs ("model-endpoint-not-found: … most serve under /v1"): the sentence is
// shown whole, and a bare name is said in words with the record's own details.
import { Writable } from 'node:stream';
import type { ConsoleOutput } from './output.js';

/** Longest notice shown (characters); a record past it is in chat.log. */
const noticeLimit = 2_000;

/** The fields of a pino record a notice reads. */
interface LogRecord {
  level?: number;
  msg?: unknown;
  err?: unknown;
  error?: unknown;
  detail?: unknown;
  reason?: unknown;
  role?: unknown;
  attempt?: unknown;
  status?: unknown;
  delayMs?: unknown;
  retryInMs?: unknown;
}

/** A Writable for pino that prints each record as a notice line ("  ⚠ …", "  ✗ …"). */
export function chatNotices(output: Pick<ConsoleOutput, 'line'>): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n').filter(Boolean)) {
        let record: LogRecord;
        try {
          record = JSON.parse(text) as LogRecord;
        } catch {
          continue; // not a JSON record: nothing to show
        }
        output.line(`  ${(record.level ?? 40) >= 50 ? '✗' : '⚠'} ${noticeText(record)}`);
      }
      done();
    },
  });
}

/** A record in words: "the worker's model call failed (HTTP 503: busy); trying again in 2 s (attempt 2)". */
export function noticeText(record: LogRecord): string {
  const message = typeof record.msg === 'string' ? record.msg : 'see the log';
  const detail = firstText(record.err, record.error, record.detail, record.reason);
  let text: string;
  if (message === 'model-call-retry') {
    const role = typeof record.role === 'string' ? `the ${record.role}'s` : 'a';
    const status = typeof record.status === 'number' ? `HTTP ${record.status}` : '';
    const why = [status, detail].filter(Boolean).join(': ');
    text = `${role} model call failed${why ? ` (${why})` : ''}; trying again${waitText(record.delayMs)}${attemptText(record.attempt)}`;
  } else if (message === 'storage-retry') {
    text = `the database did not answer${detail ? ` (${detail})` : ''}; trying again${waitText(record.retryInMs)}${attemptText(record.attempt)}`;
  } else if (/^[a-z0-9]+(?:-[a-z0-9]+)+$/.test(message)) {
    // A bare name: its words, and what went wrong when the record says.
    text = `${message.replace(/-/g, ' ')}${detail ? `: ${detail}` : ''} (${message} in chat.log)`;
  } else {
    text = message;
  }
  return text.length > noticeLimit ? `${text.slice(0, noticeLimit - 1)}… (the rest in chat.log)` : text;
}

function firstText(...values: unknown[]): string {
  for (const value of values) {
    if (typeof value === 'string' && value.trim() !== '') return value.replace(/\s+/g, ' ').trim();
    // pino writes an Error as { type, message, stack }.
    if (value && typeof value === 'object' && 'message' in value && typeof value.message === 'string') return value.message.replace(/\s+/g, ' ').trim();
  }
  return '';
}

function waitText(milliseconds: unknown): string {
  return typeof milliseconds === 'number' ? ` in ${milliseconds < 1_000 ? `${Math.round(milliseconds)} ms` : `${Math.round(milliseconds / 1_000)} s`}` : '';
}

function attemptText(attempt: unknown): string {
  return typeof attempt === 'number' ? ` (attempt ${attempt + 1})` : '';
}
