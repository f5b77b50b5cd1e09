// The storage of memory review on real Postgres: pinned lines, history with the thread each change
// came from, the browser's document list, review events and which a summarizer was given, spaces.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyLine } from '../../src/adapters/chat/memory-browser.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { MemoryReview } from '../../src/core/memory/memory-review.js';
import { ConflictError, PinnedLineError } from '../../src/core/errors.js';
import type { DocumentAuthor, MemoryScope, SessionRecord, Stores, ThreadAddress } from '../../src/core/store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

let database: TestDatabase;
let stores: Stores;
let counter = 0;

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createPrismaStores(database.prisma);
});
afterAll(async () => {
  await database?.drop();
});

function thread(overrides: Partial<ThreadAddress> = {}): ThreadAddress {
  counter += 1;
  return { platform: 'slack', workspaceId: 'T1', channelId: `C${counter}`, threadKey: `${counter}.0001`, ...overrides };
}

async function open(address = thread(), scope: MemoryScope = 'channel'): Promise<SessionRecord> {
  return (await stores.sessions.open(address, { title: 'task', scope })).session;
}

async function summarizerRun(session: SessionRecord, round = 1): Promise<DocumentAuthor & { kind: 'summarizer' }> {
  const { segment } = await stores.context.load(session.id);
  const run = await stores.memoryRuns.start({ sessionId: session.id, segmentId: segment.id, role: 'summarizer', round, forkPoint: 0 });
  return { kind: 'summarizer', memoryRunId: run.id };
}

const person: DocumentAuthor = { kind: 'person', userId: 'U7', name: 'Ada' };
const usage = { promptTokens: 1, cachedTokens: 0, completionTokens: 1 };

describe('pinned lines', () => {
  it('refuses a summarizer change that drops a pinned line, and writes nothing', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const doc = await stores.documents.write(key, '# Memory\n- launch on Friday\n- budget 10k\n', person, 0);
    await expect(stores.documents.pin(doc.id, 'launch on Friday')).rejects.toThrow(ConflictError);
    const pinned = await stores.documents.pin(doc.id, '  - launch on Friday ');
    expect(pinned.pinnedLines).toEqual(['- launch on Friday']);
    expect((await stores.documents.pin(doc.id, '- launch on Friday')).pinnedLines).toEqual(['- launch on Friday']);
    const summarizer = await summarizerRun(session);
    const dropping = stores.documents.write(key, '# Memory\n- budget 10k\n', summarizer, pinned.version);
    await expect(dropping).rejects.toThrow(PinnedLineError);
    await expect(dropping).rejects.toThrow("this would remove the pinned line '- launch on Friday' of MAIN.md; keep it");
    await expect(stores.documents.remove(key, summarizer)).rejects.toThrow(PinnedLineError);
    expect(await stores.documents.read(key)).toMatchObject({ version: pinned.version, content: doc.content });
    // Rewording around the pinned line is fine; the pin stays.
    const kept = await stores.documents.write(key, '# Memory\n- launch on Friday\n- budget 12k\n', summarizer, pinned.version);
    expect(kept.pinnedLines).toEqual(['- launch on Friday']);
    // A person may remove it: the pin goes with the line.
    const edited = await stores.documents.write(key, '# Memory\n- budget 12k\n', person, kept.version, 'edited by Ada');
    expect(edited.pinnedLines).toEqual([]);
  });

  it('moves pins with a moved document and unpins on request', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'notes.md' };
    const doc = await stores.documents.write(key, 'keep me\nother\n', person, 0);
    await stores.documents.pin(doc.id, 'keep me');
    const summarizer = await summarizerRun(session);
    const moved = await stores.documents.move(key, { ...key, path: 'archive/notes.md' }, summarizer);
    expect(moved.pinnedLines).toEqual(['keep me']);
    expect((await stores.documents.get(doc.id))?.pinnedLines).toEqual([]);
    expect((await stores.documents.unpin(moved.id, 'keep me')).pinnedLines).toEqual([]);
    expect((await stores.documents.unpin(moved.id, 'never pinned')).pinnedLines).toEqual([]);
  });

  it('keeps a revert from refusing: a person restores, pins of vanished lines go', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const summarizer = await summarizerRun(session);
    await stores.documents.write(key, 'old\n', person, 0);
    const added = await stores.documents.write(key, 'old\nnew fact\n', summarizer, 1);
    await stores.documents.pin(added.id, 'new fact');
    await expect(stores.documents.revert(added.id, 2, person, 1)).rejects.toThrow(ConflictError);
    const reverted = await stores.documents.revert(added.id, 2, person, 2);
    expect(reverted).toMatchObject({ version: 3, content: 'old\n', pinnedLines: [] });
  });
});

describe('history and the document list', () => {
  it('names the session each version came from and the summarizer note as its reason', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const summarizer = await summarizerRun(session);
    await stores.documents.write(key, 'a\n', summarizer, 0);
    await stores.documents.write(key, 'a\nb\n', { ...summarizer, sessionId: session.id }, 1);
    await stores.memoryRuns.finish(summarizer.memoryRunId, { status: 'succeeded', transcript: [], usage, note: 'Noted the launch\ndate.' });
    await stores.documents.write(key, 'a\nb\nc\n', { ...person, sessionId: session.id } as DocumentAuthor, 2, 'edited by Ada');
    await stores.documents.write(key, 'a\nb\nc\nd\n', person, 3, 'edited by Ada');
    const document = await stores.documents.read(key);
    const { versions, total } = await stores.documents.history(document!.id, { offset: 0, limit: 3 });
    expect(total).toBe(4);
    expect(versions.map((version) => [version.version, version.author.kind, version.reason, version.sessionId])).toEqual([
      [4, 'person', 'edited by Ada', null],
      [3, 'person', 'edited by Ada', session.id],
      [2, 'summarizer', 'Noted the launch date.', session.id],
    ]);
    const older = await stores.documents.history(document!.id, { offset: 3, limit: 3 });
    // Written without a session on the author: found through its run.
    expect(older.versions.map((version) => [version.version, version.sessionId, version.reason])).toEqual([[1, session.id, 'Noted the launch date.']]);

    const list = await stores.documents.spaceDocuments(session.memorySpaceId);
    expect(list.map((entry) => [entry.document.path, entry.lastChange.version, entry.lastChange.author.kind])).toEqual([['MAIN.md', 4, 'person']]);
  });
});

describe('review events', () => {
  it('gives the next summarizer the events no succeeded run was given', async () => {
    const session = await open();
    const event = (text: string) => stores.reviews.record({ spaceId: session.memorySpaceId, kind: 'pin', documentPath: 'MAIN.md', authorId: 'U7', authorName: 'Ada', text, sessionId: session.id });
    const first = await event('one');
    await event('two');
    expect((await stores.reviews.unseen(session.memorySpaceId, 10)).events.map((entry) => entry.text)).toEqual(['one', 'two']);
    const failed = await summarizerRun(session, 1);
    await stores.reviews.markGiven(failed.memoryRunId, first.id + 1);
    await stores.memoryRuns.finish(failed.memoryRunId, { status: 'failed', transcript: [], usage });
    // A failed run's events reach the next one.
    expect((await stores.reviews.unseen(session.memorySpaceId, 10)).events).toHaveLength(2);
    const succeeded = await summarizerRun(session, 2);
    await stores.reviews.markGiven(succeeded.memoryRunId, first.id);
    await stores.memoryRuns.finish(succeeded.memoryRunId, { status: 'succeeded', transcript: [], usage });
    await event('three');
    await event('four');
    expect(await stores.reviews.unseen(session.memorySpaceId, 2)).toMatchObject({ omitted: 1, events: [{ text: 'three' }, { text: 'four' }] });
    expect((await stores.reviews.recent(session.memorySpaceId, 2)).map((entry) => entry.text)).toEqual(['four', 'three']);
    // Another space sees none of them.
    expect((await stores.reviews.unseen((await open()).memorySpaceId, 10)).events).toEqual([]);
  });
});

describe('memory spaces', () => {
  it('names the conversation that owns each space', async () => {
    const cases: Array<[Partial<ThreadAddress>, MemoryScope, string | null]> = [
      [{ channelId: 'CPUB' }, 'channel', 'CPUB'],
      [{ channelId: 'CTHR' }, 'thread', 'CTHR'],
      [{ channelId: 'CWS', workspaceId: 'TWS' }, 'workspace', null],
      [{ channelId: 'GPRIV', workspaceId: 'TWS', visibility: 'private' }, 'workspace', 'GPRIV'],
      [{ channelId: 'DADA', visibility: 'direct' }, 'channel', 'DADA'],
      [{ channelId: 'DBOB', visibility: 'direct' }, 'thread', 'DBOB'],
    ];
    for (const [address, scope, channelId] of cases) {
      const session = await open(thread(address), scope);
      expect(await stores.spaces.get(session.memorySpaceId)).toMatchObject({ platform: 'slack', scope, channelId });
    }
    const session = await open(thread({ workspaceId: 'TLIST' }));
    expect(await stores.spaces.list('slack', 'TLIST')).toEqual([]);
    await stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, 'x', person, 0);
    expect((await stores.spaces.list('slack', 'TLIST')).map((space) => space.id)).toEqual([session.memorySpaceId]);
  });
});

/**
 * Counts the statements sent to Postgres on the database's pool, in a transaction or not, until
 * `stop()` (Prisma's queries and the pool's named statements alike).
 */
function countStatements(pool: pg.Pool): { texts: string[]; stop(): void } {
  const texts: string[] = [];
  const { query, connect } = pool;
  const record = (args: unknown[]) => texts.push(String((args[0] as { text?: string }).text ?? args[0]));
  Object.assign(pool, {
    query: (...args: unknown[]) => (record(args), (query as (...inner: unknown[]) => unknown).apply(pool, args)),
    // A client checked out for a transaction (pool.query checks its own out with a callback).
    connect: (...args: unknown[]) => {
      if (args.length > 0) return (connect as (...inner: unknown[]) => unknown).apply(pool, args);
      return (connect as () => Promise<pg.PoolClient>).call(pool).then((client) => {
        const own = client.query;
        return Object.assign(client, { query: (...inner: unknown[]) => (record(inner), (own as (...passed: unknown[]) => unknown).apply(client, inner)) });
      });
    },
  });
  return { texts, stop: () => void Object.assign(pool, { query, connect }) };
}

describe("a person's edit", () => {
  it('is one statement: the compare-and-set, the version by the person and its review event, pins of removed lines dropped', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const first = await stores.documents.write(key, '# Memory\n- keep\n- drop\n- last\n', person, 0);
    await stores.documents.pin(first.id, '- last');
    await stores.documents.pin(first.id, '- drop');
    await stores.documents.pin(first.id, '- keep');
    // What the access check read (it is not read again).
    const read = (await stores.documents.get(first.id))!;
    const ada = { userId: 'U7', name: 'Ada', sessionId: session.id };
    const recorded = countStatements(database.pool!);
    let outcome;
    try {
      outcome = await new MemoryReview(stores).edit({ documentId: read.id, baseVersion: read.version, partIndex: 0, text: '# Memory\n- keep\n- last\n- new\n' }, { inputChars: 1_000, inputs: 2 }, ada, read);
    } finally {
      recorded.stop();
    }
    // It was 15 (the document read again, the write's transaction, the new version read back to
    // quote its diff, the event on its own); the whole Slack edit was 16, and is 4 now (the access
    // check's two reads, the thread's session, this).
    expect(recorded.texts).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'saved', document: { version: 2, content: '# Memory\n- keep\n- last\n- new\n', pinnedLines: ['- last', '- keep'] } });
    expect(await stores.documents.get(first.id)).toMatchObject({ version: 2, pinnedLines: ['- last', '- keep'] });
    const [latest] = await stores.documents.versions(first.id);
    expect(latest).toMatchObject({ version: 2, content: '# Memory\n- keep\n- last\n- new\n', author: { kind: 'person', userId: 'U7', name: 'Ada', sessionId: session.id }, reason: 'edited by Ada', deleted: false });
    const { events } = await stores.reviews.unseen(session.memorySpaceId, 10);
    expect(events.map(({ kind, documentPath, authorId, authorName, text, sessionId }) => ({ kind, documentPath, authorId, authorName, text, sessionId }))).toEqual([
      { kind: 'edit', documentPath: 'MAIN.md', authorId: 'U7', authorName: 'Ada', text: '- - drop\n+ - new', sessionId: session.id },
    ]);
  });

  it('writes neither the version nor the event when the document moved on since the access check read it', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const read = await stores.documents.write(key, 'one\n', person, 0);
    await stores.documents.write(key, 'one\ntwo\n', person, 1);
    const outcome = await new MemoryReview(stores).edit({ documentId: read.id, baseVersion: 1, partIndex: 0, text: 'mine\n' }, { inputChars: 1_000, inputs: 2 }, { userId: 'U7', name: 'Ada' }, read);
    expect(outcome).toMatchObject({ status: 'conflict', document: { version: 2 }, text: 'mine\n' });
    expect((await stores.documents.versions(read.id)).map((version) => version.version)).toEqual([2, 1]);
    expect((await stores.reviews.unseen(session.memorySpaceId, 10)).events).toEqual([]);
  });
});

describe('review actions under a race', () => {
  const reviewer = { userId: 'U7', name: 'Ada' };
  const limits = { inputChars: 1_000, inputs: 2 };

  /** The stores as seen by someone who looked a moment ago: `get` answers with the version they saw. */
  function lookedBefore(seen: Awaited<ReturnType<Stores['documents']['get']>>): Pick<Stores, 'documents' | 'reviews'> {
    let first = true;
    const documents = { ...stores.documents, get: async (id: string) => (first ? ((first = false), seen) : stores.documents.get(id)) };
    return { documents, reviews: stores.reviews };
  }

  it('does not save an edit over a change that landed between its look and its write', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const seen = await stores.documents.write(key, 'old\n', person, 0);
    await stores.documents.write(key, 'old\nnewer\n', person, 1);
    // The access check read version 1; the edit writes only if it is still so.
    const outcome = await new MemoryReview(stores).edit({ documentId: seen.id, baseVersion: 1, partIndex: 0, text: 'mine\n' }, limits, reviewer, seen);
    expect(outcome).toMatchObject({ status: 'conflict', text: 'mine\n', later: [{ version: 2 }] });
    expect((await stores.documents.read(key))?.content).toBe('old\nnewer\n');
  });

  it('does not undo a change that landed after the person looked', async () => {
    const session = await open();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    await stores.documents.write(key, 'one\n', person, 0);
    const seen = await stores.documents.write(key, 'two\n', person, 1);
    await stores.documents.write(key, 'three\n', person, 2);
    expect(await new MemoryReview(lookedBefore(seen)).undo(seen.id, 2, reviewer)).toMatchObject({ status: 'changed-again' });
    expect(await new MemoryReview(stores).undo(seen.id, 2, reviewer)).toMatchObject({ status: 'changed-again' });
    expect((await stores.documents.read(key))?.content).toBe('three\n');
    expect(await new MemoryReview(stores).undo(seen.id, 3, reviewer)).toMatchObject({ status: 'reverted', undone: { version: 3 } });
    expect((await stores.documents.read(key))?.content).toBe('two\n');
  });
});

describe('pin <text>', () => {
  it('pins the one line that has the text, names several, and adds a missing one to MAIN.md', async () => {
    const session = await open();
    const reviewer = { userId: 'U7', name: 'Ada' };
    const main = await stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, '# Memory\n- launch on Friday\n- launch party on Saturday\n', person, 0);
    expect(await new MemoryReview(stores).pinByText(session.memorySpaceId, 'launch on friday', reviewer)).toEqual({ status: 'pinned', path: 'MAIN.md', line: '- launch on Friday' });
    expect(await new MemoryReview(stores).pinByText(session.memorySpaceId, 'launch', reviewer)).toMatchObject({ status: 'ambiguous', matches: [{ line: '- launch on Friday' }, { line: '- launch party on Saturday' }] });
    expect(await new MemoryReview(stores).pinByText(session.memorySpaceId, 'budget is 10k', reviewer)).toEqual({ status: 'added', path: 'MAIN.md', line: '- budget is 10k' });
    const after = await stores.documents.get(main.id);
    expect(after).toMatchObject({ content: '# Memory\n- launch on Friday\n- launch party on Saturday\n- budget is 10k\n', pinnedLines: ['- launch on Friday', '- budget is 10k'] });
    expect((await stores.reviews.recent(session.memorySpaceId, 10)).map((event) => event.kind)).toEqual(['pin', 'edit', 'pin']);
  });
});

describe('reverts of a memory run', () => {
  it('record a review event per restored document, with what the revert took out', async () => {
    const session = await open();
    const reviewer = { userId: 'U7', name: 'Ada', sessionId: session.id };
    const summarizer = await summarizerRun(session);
    const main = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    const notes = { ...main, path: 'notes.md' };
    await stores.documents.write(main, 'kept\n', person, 0);
    await stores.documents.write(main, 'kept\nwrong fact\n', summarizer, 1);
    await stores.documents.write(notes, 'a\n', summarizer, 0);
    await stores.documents.write(notes, 'a\nb\n', person, 1);
    const result = await new MemoryReview(stores).revert(summarizer.memoryRunId, reviewer);
    expect(result).toMatchObject({ reverted: ['MAIN.md'], needsChoice: [{ path: 'notes.md' }] });
    // The history says which version was undone and when, in words a reader knows (no run id).
    const mainDocument = (await stores.documents.read(main))!;
    const [revertVersion] = (await stores.documents.history(mainDocument.id, { offset: 0, limit: 1 })).versions;
    expect(revertVersion?.reason).toMatch(/^undid the memory change that made v2 \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)$/);
    expect(historyLine(revertVersion!)).not.toContain(summarizer.memoryRunId);
    const notesDocument = (await stores.documents.read(notes))!;
    expect(await new MemoryReview(stores).revertWithLaterChanges(summarizer.memoryRunId, notesDocument.id, notesDocument.version, reviewer)).toEqual({ status: 'reverted', path: 'notes.md' });
    const events = await stores.reviews.recent(session.memorySpaceId, 10);
    expect(events.map((event) => [event.kind, event.documentPath, event.authorName, event.text, event.sessionId])).toEqual([
      ['revert', 'notes.md', 'Ada', '- a\n- b', session.id],
      ['revert', 'MAIN.md', 'Ada', '- wrong fact', session.id],
    ]);
  });

  it('count a person\'s edit between two versions of the run as a later change, and offer the choice (R13)', async () => {
    const session = await open();
    const reviewer = { userId: 'U7', name: 'Ada', sessionId: session.id };
    const summarizer = await summarizerRun(session);
    const main = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
    await stores.documents.write(main, 'kept\n', person, 0);
    await stores.documents.write(main, 'kept\nrun line\n', summarizer, 1);
    await stores.documents.write(main, 'kept\nrun line\nAda\'s line\n', person, 2);
    await stores.documents.write(main, 'kept\nrun line\nAda\'s line\nrun again\n', summarizer, 3);
    const [change] = await stores.documents.runChanges(summarizer.memoryRunId);
    expect(change).toMatchObject({ firstVersion: 2, lastVersion: 4, later: [{ version: 3, author: { kind: 'person', name: 'Ada' } }] });
    const result = await new MemoryReview(stores).revert(summarizer.memoryRunId, reviewer);
    expect(result).toMatchObject({ reverted: [], needsChoice: [{ path: 'MAIN.md' }] });
    expect((await stores.documents.read(main))?.content).toBe('kept\nrun line\nAda\'s line\nrun again\n');
  });
});
