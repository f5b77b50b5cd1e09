// `memory export` stays bounded (docs/security.md "Security and limits"): 2,000 versions of 50 KiB give a zip
// under the cap that says (in README.md and in the answer) what it left out, built without holding
// the event loop; one export at a time per person and space; documents and history under their own
// roots, so a document named like a version's file cannot replace it.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type CommandScope } from '../../src/adapters/chat/command-runner.js';
import { exportCaps, exportRunningText, memoryExportFile } from '../../src/adapters/chat/memory-export.js';
import type { DocumentAuthor, SessionRecord } from '../../src/core/store.js';
import { createAgentHarness, newThread, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { unzip } from '../support/unzip.js';

let database: TestDatabase;
let harness: AgentHarness;

beforeAll(async () => {
  database = await createTestDatabase();
  harness = await createAgentHarness({ database });
});
afterAll(async () => {
  await harness.close();
  await database.drop();
});

const ada: DocumentAuthor = { kind: 'person', userId: 'U7', name: 'Ada' };

async function newSpace(): Promise<SessionRecord> {
  const { session } = await harness.stores.sessions.open(newThread(), { title: 'export', scope: 'channel' });
  return session;
}

function scopeOf(session: SessionRecord, userId = 'U7'): CommandScope {
  return { agent: harness.agent, stores: harness.stores, session, actor: { userId, name: userId }, prefix: '@hippo', access: async () => ({ allowed: true }) };
}

/** The number of files the archive's end record says it holds (duplicates included). */
function entryCount(archive: Buffer): number {
  return archive.readUInt16LE(archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])) + 10);
}

describe('a document with 2,000 versions of 50 KiB', () => {
  let session: SessionRecord;

  beforeAll(async () => {
    session = await newSpace();
    const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'notes/big.md' };
    const first = await harness.stores.documents.write(key, 'v1', ada, 0);
    // Versions 2…2001 as a summarizer would have written them: 50 KiB each of text that compresses
    // about as well as prose does.
    await database.prisma.$executeRaw`
      INSERT INTO memory_document_versions (id, document_id, version, path, content, author_kind, author_id)
      SELECT gen_random_uuid()::text, ${first.id}, n, 'notes/big.md',
             (SELECT string_agg(md5(n::text || '-' || k::text), ' ') FROM generate_series(1, 1552) AS k), 'summarizer', 'run-' || n
      FROM generate_series(2, 2001) AS n`;
    await database.prisma.$executeRaw`UPDATE memory_documents SET version = 2001, content = 'latest' WHERE id = ${first.id}`;
  }, 300_000);

  it('gives a zip within the cap that says what it left out, three at once without stalling the event loop', async () => {
    // A running service has its statements compiled and zlib's threads started: one export first.
    await memoryExportFile(harness.stores.documents, session.memorySpaceId);
    const stall = monitorEventLoopDelay({ resolution: 5 });
    stall.enable();
    const files = await Promise.all([1, 2, 3].map(() => memoryExportFile(harness.stores.documents, session.memorySpaceId)));
    stall.disable();
    for (const file of files) {
      expect(file?.data.length).toBeLessThanOrEqual(exportCaps.archiveBytes);
      const archive = unzip(file?.data ?? Buffer.alloc(0));
      const versions = [...archive.keys()].filter((name) => name.startsWith('history/notes/big.md/'));
      expect(versions.length).toBeGreaterThan(10);
      expect(versions.length).toBeLessThan(2001);
      // The newest first: the last one kept is 2001, and what is left out is the oldest.
      expect(versions[0]).toBe('history/notes/big.md/v2001.md');
      const left = 2001 - versions.length;
      expect(archive.get('README.md')?.data.toString('utf8')).toContain(`- "notes/big.md": ${left} of its 2001 versions (the oldest)`);
      expect(file?.summary).toBe(`1 memory document as Markdown with front matter under documents/, and ${versions.length} versions under history/. Left out: ${left} older versions, past the export's cap (1,000 versions, 64 MiB of text, a zip of 8 MiB); README.md in the zip lists them.`);
    }
    // Issue #41 measured 3,483 ms for three such exports before (everything deflated at once, on the
    // event loop). The target is 100 ms; warmed, it is about 20 ms (bench/export-stall.ts, bench/
    // RESULTS.md). The bound here is generous: on a shared machine under load (other test files, other
    // engineers) any timer waits for a core, whatever the export does (469 ms seen at load 28).
    expect(stall.max / 1e6).toBeLessThan(1_500);
  }, 300_000);
});

describe('names', () => {
  it('keeps documents and history under their own roots: a document named like a version file cannot replace it', async () => {
    const session = await newSpace();
    const put = (path: string, content: string, version: number) => harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path }, content, ada, version);
    await put('MAIN.md', 'the real first version', 0);
    await put('MAIN.md', 'the real second version', 1);
    await put('history/MAIN.md/v0001.md', 'forged', 0);
    await put('Notes.md', 'upper', 0);
    await put('notes.md', 'lower', 0);
    await put('CON', 'device', 0);
    await put('evil\u202egpj.md', 'bidi', 0);
    const reply = await runCommand('export', scopeOf(session));
    const data = reply.file?.data ?? Buffer.alloc(0);
    const files = unzip(data);
    // As many files as names: none twice (`unzip -o` would take the last of two alike).
    expect(entryCount(data)).toBe(files.size);
    expect(files.get('history/MAIN.md/v0001.md')?.data.toString('utf8')).toMatch(/the real first version$/);
    expect(files.get('documents/history/MAIN.md/v0001.md')?.data.toString('utf8')).toMatch(/forged$/);
    expect([...files.keys()].filter((name) => name.startsWith('documents/')).sort()).toEqual([
      'documents/MAIN.md', 'documents/Notes.md', 'documents/_CON', 'documents/evilgpj.md', 'documents/history/MAIN.md/v0001.md', 'documents/notes~2.md',
    ]);
    // The front matter keeps the document's own path.
    expect(files.get('documents/evilgpj.md')?.data.toString('utf8')).toContain('path: "evil\\u202egpj.md"');
  }, 60_000);
});

describe('one export at a time', () => {
  it('refuses a second export of the same space by the same person while the first runs, privately; others are not held', async () => {
    const session = await newSpace();
    await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, '# Plan', ada, 0);
    const [first, second, other] = await Promise.all([runCommand('export', scopeOf(session)), runCommand('export', scopeOf(session)), runCommand('export', scopeOf(session, 'U8'))]);
    expect(first.file?.name).toMatch(/\.zip$/);
    expect(second).toEqual({ text: exportRunningText, private: true });
    expect(other.file?.name).toMatch(/\.zip$/);
    // Once it is done, the person may export again.
    expect((await runCommand('export', scopeOf(session))).file?.name).toMatch(/\.zip$/);
  }, 60_000);
});
