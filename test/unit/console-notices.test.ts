// The terminal chat's warning lines: a log record said in words, whole, with its details.
import { describe, expect, it } from 'vitest';
import { noticeText } from '../../src/adapters/console/notices.js';
import { historyLine } from '../../src/adapters/chat/memory-browser.js';

describe('terminal notices', () => {
  it('says a model call retry in words, with the error, the wait and the next attempt', () => {
    expect(noticeText({ level: 40, msg: 'model-call-retry', role: 'worker', attempt: 1, status: 503, delayMs: 2_000, error: 'upstream busy' }))
      .toBe("the worker's model call failed (HTTP 503: upstream busy); trying again in 2 s (attempt 2)");
  });

  it('says a bare record name in words with its error, and names the record to find in chat.log', () => {
    expect(noticeText({ level: 40, msg: 'lease-renew-failed', err: { type: 'Error', message: 'connection\nreset' } })).toBe('lease renew failed: connection reset (lease-renew-failed in chat.log)');
    expect(noticeText({ level: 40, msg: 'storage-retry', err: 'Error: ECONNREFUSED', attempt: 2, retryInMs: 1_000 })).toBe('the database did not answer (Error: ECONNREFUSED); trying again in 1 s (attempt 3)');
  });

  it('shows a hint whole, however long (the start-up notice kept its "/v1" past 160 characters)', () => {
    const msg = 'model-endpoint-not-found: model endpoint 127.0.0.1:11434 answered 404 for /models: check OPENAI_BASE_URL and MODEL (the API of Ollama, vLLM and LM Studio is under /v1: http://127.0.0.1:11434/v1)';
    expect(msg.length).toBeGreaterThan(160);
    expect(noticeText({ level: 40, msg })).toBe(msg);
  });
});

describe('history lines', () => {
  it('show no run id in the reason of a revert stored before reasons named the version', () => {
    const line = historyLine({
      documentId: 'd', path: 'MAIN.md', version: 4, content: '', deleted: false, author: { kind: 'person', userId: 'U1', name: 'Ada' },
      reason: 'undid the memory change of run 3f2b8c1e-95aa-4c1d-b6a4-0e6f1d2c3b4a', revertedRunId: '3f2b8c1e-95aa-4c1d-b6a4-0e6f1d2c3b4a',
      reviewedBy: null, sessionId: null, createdAt: new Date('2026-12-07T12:10:00Z'),
    });
    expect(line).toBe('v4 · 2026-12-07 12:10 UTC · Ada · undid the memory change');
  });
});
