import { describe, expect, it } from 'vitest';
import { errorNoteText, formatTokens, memoryDiffMarkdown, memoryNoteLine, resetNoteLine, revertNoteLine } from '../../src/adapters/chat/notes.js';

const change = (path: string, added: number, removed: number) => ({ documentId: path, path, version: 2, previousVersion: 1, added, removed, deleted: false });

describe('notes', () => {
  it('summarises a memory change in one line', () => {
    const line = memoryNoteLine({ changes: [change('notes.md', 3, 0), change('MAIN.md', 8, 2)], usage: { promptTokens: 1000, cachedTokens: 920, completionTokens: 50 } });
    expect(line).toBe('🧠 Memory updated · MAIN.md +8 −2 · 2 documents · cache 92%');
  });

  it('leaves out the cache ratio when nothing was sent', () => {
    expect(memoryNoteLine({ changes: [change('MAIN.md', 1, 0)], usage: { promptTokens: 0, cachedTokens: 0, completionTokens: 0 } })).toBe('🧠 Memory updated · MAIN.md +1 −0');
  });

  it('summarises a reset', () => {
    expect(resetNoteLine({ tokensBefore: 118_000, tokensAfter: 14_200, carriedMessages: 6 })).toBe('♻️ Context reset · 118k → 14k tokens · 6 messages carried over');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(1_250)).toBe('1.3k');
  });

  it('names the reverter and the documents', () => {
    expect(revertNoteLine('Ada', ['MAIN.md', 'a.md', 'b.md'])).toBe('↩️ Ada reverted the memory change to MAIN.md, a.md and b.md');
  });

  it('tells how to resume after an error', () => {
    expect(errorNoteText({ code: 'model', message: 'rate limited' }, '@hippo resume')).toContain('`@hippo resume`');
    // The provider's words stay in the log: a note never echoes them.
    expect(errorNoteText({ code: 'model', message: 'Incorrect API key sk-live-123 <script>' }, '@hippo resume')).not.toMatch(/sk-live|script|Incorrect/);
    expect(errorNoteText({ code: 'storage', message: 'database: terminating connection', retryable: true }, '@hippo resume')).toBe("⚠️ The database is unreachable, so I stopped here for now. Nothing is lost: I'll continue by myself as soon as it is back.");
  });

  it('names a database error that will not pass by waiting as such, not as the database being away', () => {
    const refused = { code: 'storage', message: 'database: string is too long for tsvector', retryable: false };
    expect(errorNoteText(refused, '@hippo resume')).toBe('⚠️ I stopped because of a database error (details are in the service log).\nNothing is lost: say `@hippo resume` to continue from here.');
    expect(errorNoteText({ code: 'storage', message: 'database: refused' }, '@hippo resume')).not.toMatch(/unreachable|by myself/);
  });

  it('renders diffs as fenced Markdown', () => {
    const text = memoryDiffMarkdown([{ ...change('MAIN.md', 1, 1), diff: '- old\n+ new', content: 'new' }]);
    expect(text).toBe('**MAIN.md +1 −1** (v1 → v2)\n```diff\n- old\n+ new\n```');
  });
});
