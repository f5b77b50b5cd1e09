// People take and find memory (docs/product.md "Review memory"): `memory export` is a zip of the
// space's documents as Markdown with front matter and their history; `memory search <words>`
// finds documents and past conversations in any language, through GIN indexes (simple config).
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type CommandScope } from '../../src/adapters/chat/command-runner.js';
import { safePath } from '../../src/adapters/chat/memory-export.js';
import type { DocumentAuthor, SessionRecord } from '../../src/core/store.js';
import { createAgentHarness, newThread, personMessage, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startScript } from '../support/processes.js';
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

function scopeOf(session: SessionRecord): CommandScope {
  return { agent: harness.agent, stores: harness.stores, session, actor: { userId: 'U7', name: 'Ada' }, prefix: '@hippo', access: async () => ({ allowed: true }) };
}

/** Writes a space document over whatever version it has (sessions start with MAIN.md). */
async function put(session: SessionRecord, path: string, content: string, author: DocumentAuthor = ada, reason?: string) {
  const key = { spaceId: session.memorySpaceId, sessionKey: '', path };
  const current = await harness.stores.documents.read(key);
  return harness.stores.documents.write(key, content, author, current?.version ?? 0, reason);
}

/** A session with one finished turn: the person's words and the model's answer are in its context. */
async function conversation(text: string, answer: string): Promise<SessionRecord> {
  harness.model.enqueue({ content: answer });
  const address = newThread();
  const { session } = await harness.agent.submit(personMessage(address, text), { startSession: true });
  if (!session) throw new Error('no session');
  await harness.waitForEvent('run-end', (event) => event.session.id === session.id, 20_000);
  return session;
}

describe('memory search', () => {
  it('finds documents and past conversations in any language, words in bold, and says when nothing matches', async () => {
    const session = await conversation('Ada will das Deployment am Freitag machen, bitte notieren.', 'Notiert: Deployment am Freitag.');
    const main = await put(session, 'MAIN.md', '# Team\n- Ada will den Release-Plan schreiben\n');
    await put(session, 'notes/infra.md', '# Infra\n- Kubernetes 1.31\n');
    // "will" is an English stop word: with the English configuration nothing would match.
    const reply = await runCommand('search', scopeOf(session), 'will');
    expect(reply.private).toBe(false);
    const lines = reply.text.split('\n');
    expect(lines[0]).toBe('🔎 Memory matching “will”:');
    expect(lines[1]).toBe('**Documents**');
    expect(lines[2]).toMatch(new RegExp(`^• MAIN\\.md \\(v${main.version}\\): .*Ada \\*\\*will\\*\\* den Release-Plan`));
    expect(lines[3]).toBe('**Conversations**');
    expect(lines[4]).toMatch(/^• “Ada will das Deployment am Freitag machen, bitte notieren\.” \(user, context \d+\): .*Ada \*\*will\*\* das Deployment/);
    expect(reply.text).not.toContain('infra.md');
    expect((await runCommand('search', scopeOf(session), 'Freitag Kubernetes')).text).toBe('🔎 Nothing in this memory matches “Freitag Kubernetes”.');
    expect((await runCommand('search', scopeOf(session), '')).text).toBe('Say what to look for: `@hippo memory search <words>`.');
    // The model's memory_search (R15) matches the same way.
    const hits = await harness.stores.context.searchOriginals(session.memorySpaceId, 'will', '', 5, 'test');
    expect(hits.map((hit) => hit.role)).toEqual(['user']);
  }, 60_000);

  it('has GIN indexes on the stored, length-capped search columns the searches use', async () => {
    const rows = await database.prisma.$queryRaw<Array<{ indexname: string; indexdef: string }>>`
      SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%search%' ORDER BY indexname`;
    expect(rows.map((row) => [row.indexname, row.indexdef.replace(/^.* USING /, '')])).toEqual([
      ['context_messages_search_vector_idx', 'gin (search_vector)'],
      ['memory_documents_search_vector_idx', 'gin (search_vector)'],
    ]);
    const generated = await database.prisma.$queryRaw<Array<{ table_name: string; generation_expression: string }>>`
      SELECT table_name, generation_expression FROM information_schema.columns WHERE column_name = 'search_vector' ORDER BY table_name`;
    expect(generated).toEqual([
      { table_name: 'context_messages', generation_expression: "to_tsvector('simple'::regconfig, \"left\"(search_text, 100000))" },
      { table_name: 'memory_documents', generation_expression: "to_tsvector('simple'::regconfig, \"left\"(content, 100000))" },
    ]);
  });
});

describe('memory export', () => {
  it('is a zip of the documents with front matter (version, author, date) and every version under history/', async () => {
    const session = await conversation('Plan the launch', 'Planned.');
    const seeded = (await harness.stores.documents.spaceDocuments(session.memorySpaceId)).map(({ document }) => [document.path, document.version]);
    expect(seeded).toEqual([['MAIN.md', 1]]); // as a session starts it
    await put(session, 'MAIN.md', '# Launch\n- Friday\n');
    const third = await put(session, 'MAIN.md', '# Launch\n- Saturday\n', { kind: 'worker', sessionId: session.id }, 'moved');
    await put(session, '../../etc/évasion.md', 'ça va\n');
    const reply = await runCommand('export', scopeOf(session));
    expect(reply.text).toBe('📦 2 memory documents as Markdown with front matter under documents/, and 4 versions under history/.');
    expect(reply.file?.name).toMatch(/^hippo-memory-\d{4}-\d{2}-\d{2}\.zip$/);
    const files = unzip(reply.file?.data ?? Buffer.alloc(0));
    expect([...files.keys()].sort()).toEqual(['README.md', 'documents/MAIN.md', 'documents/etc/évasion.md', 'history/MAIN.md/v0001.md', 'history/MAIN.md/v0002.md', 'history/MAIN.md/v0003.md', 'history/etc/évasion.md/v0001.md']);
    expect(files.get('README.md')?.data.toString('utf8')).toContain('Nothing was left out.');
    const main = files.get('documents/MAIN.md')?.data.toString('utf8') ?? '';
    expect(main).toMatch(/^---\npath: "MAIN\.md"\nversion: 3\nauthor: "worker"\ndate: "\d{4}-\d{2}-\d{2}T[\d:.]+Z"\n---\n\n# Launch\n- Saturday\n$/);
    const v2 = files.get('history/MAIN.md/v0002.md')?.data.toString('utf8') ?? '';
    expect(v2).toMatch(/^---\npath: "MAIN\.md"\nversion: 2\nauthor: "Ada"\nauthor_kind: "person"\ndate: "[^"]+"\n---\n\n# Launch\n- Friday\n$/);
    expect(files.get('history/MAIN.md/v0003.md')?.data.toString('utf8')).toContain('reason: "moved"');
    expect(files.get('documents/etc/évasion.md')?.data.toString('utf8')).toMatch(/^---\npath: "\.\.\/\.\.\/etc\/évasion\.md"\n[\s\S]*\n---\n\nça va\n$/);
    expect(Math.abs((files.get('documents/MAIN.md')?.modified.getTime() ?? 0) - third.updatedAt.getTime())).toBeLessThan(3_000);
  }, 60_000);

  it('is also a script: npm run memory:export lists a workspace\'s spaces and writes one as a zip', async () => {
    const session = await conversation('Plan the offsite', 'Planned.');
    await put(session, 'MAIN.md', '# Offsite\n- Lisbon\n');
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
    const listing = startScript('scripts/memory-export.ts', env, ['--platform', session.platform, '--workspace', session.workspaceId]);
    expect((await listing.exited).code).toBe(0);
    expect(listing.lines).toContain(`${session.memorySpaceId}  channel  ${session.channelId}`);
    const out = join(await mkdtemp(join(tmpdir(), 'hippo-export-')), 'memory.zip');
    const writing = startScript('scripts/memory-export.ts', env, ['--space', session.memorySpaceId, '--out', out]);
    expect((await writing.exited).code).toBe(0);
    expect(writing.lines).toEqual([`wrote ${out}: 1 document, 2 versions`]);
    expect(unzip(await readFile(out)).get('documents/MAIN.md')?.data.toString('utf8')).toMatch(/\n---\n\n# Offsite\n- Lisbon\n$/);
    const unknown = startScript('scripts/memory-export.ts', env, ['--space', 'no-such-space']);
    expect((await unknown.exited).code).toBe(1);
    expect(unknown.stderr()).toBe('no memory space no-such-space: list them with --platform and --workspace\n');
  }, 180_000);

  it('makes model-chosen paths safe to unpack', () => {
    expect(safePath('../../etc/passwd')).toBe('etc/passwd');
    expect(safePath('/abs//./x.md')).toBe('abs/x.md');
    expect(safePath('C:\\notes\\a?.md')).toBe('C_/notes/a_.md');
    expect(safePath('..')).toBe('untitled.md');
  });
});
