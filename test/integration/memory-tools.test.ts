// The summarizer's small-edit tools on real Postgres: appending and replacing a section write a
// new version of just what changed (issue #16: summaries by edit, not rewrite).
import { describe, expect, it } from 'vitest';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { memoryTools } from '../../src/core/memory/memory-tools.js';
import { ToolExecutor } from '../../src/core/loop/tool-executor.js';
import { newThread } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { toolContext } from '../support/tool-context.js';
import { startSession } from '../support/sessions.js';

const bed = useTestBed();

const main = `# Memory

## Billing migration
- Goal: move billing to the event store.

### Details
- shards in order

## Decisions
- re-run a step only when its log fails
`;

async function setUp() {
  const stores = createPrismaStores(bed.database.prisma);
  const session = await startSession(stores, newThread());
  const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
  await stores.documents.write(key, main, { kind: 'system' }, 0);
  const executor = new ToolExecutor(memoryTools(stores));
  const context = toolContext({ role: 'summarizer', sessionId: session.id, memorySpaceId: session.memorySpaceId, memoryRunId: 'run-1' });
  const call = (name: string, args: Record<string, unknown>) => executor.execute({ id: `c-${name}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }, context);
  const read = async () => (await stores.documents.read(key))?.content;
  return { call, read, stores, key };
}

describe('memory_append and memory_replace_section', () => {
  it('appends lines at the end of a document or of one section', async () => {
    const { call, read } = await setUp();
    expect((await call('memory_append', { path: 'MAIN.md', text: '- step 3 done' })).content).toBe('MAIN.md appended (version 2).');
    expect(await read()).toBe(`${main}- step 3 done\n`);
    // Under a heading: at the end of its section, before the next heading of its level.
    expect((await call('memory_append', { path: 'MAIN.md', heading: '## Billing migration', text: '- Progress: steps 1–3' })).content).toBe('MAIN.md appended (version 3).');
    expect(await read()).toContain('### Details\n- shards in order\n- Progress: steps 1–3\n\n## Decisions');
  });

  it('replaces the body of one section and leaves the others alone', async () => {
    const { call, read } = await setUp();
    const result = await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: '- keep shards in order\n- never skip a failed step', expected_version: 1 });
    expect(result.content).toBe('MAIN.md section "Decisions" replaced (version 2).');
    expect(await read()).toBe(main.replace('- re-run a step only when its log fails\n', '- keep shards in order\n- never skip a failed step\n'));
    await call('memory_replace_section', { path: 'MAIN.md', heading: '### Details', new_body: '- shards 0–63', expected_version: 2 });
    expect(await read()).toContain('### Details\n- shards 0–63\n\n## Decisions');
  });

  it('refuses an unknown or ambiguous heading and a stale version, changing nothing', async () => {
    const { call, read } = await setUp();
    expect((await call('memory_append', { path: 'MAIN.md', heading: '## Nowhere', text: 'x' })).content).toBe('Error: no heading "## Nowhere" in MAIN.md; name one heading exactly as it is written (nothing changed)');
    expect((await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: 'x', expected_version: 7 })).content).toMatch(/^Error: MAIN\.md changed since you read it/);
    expect((await call('memory_append', { path: 'NOPE.md', text: 'x' })).content).toBe('Error: no memory document NOPE.md; create it with memory_write');
    expect(await read()).toBe(main);
  });

  it('refuses a replace, an edit or a delete without the version read, so a person\'s edit made since is never overwritten', async () => {
    const { call, read, stores, key } = await setUp();
    // The summarizer read version 1; a person then corrects a line.
    const corrected = main.replace('- re-run a step only when its log fails', '- the database is Postgres 16');
    await stores.documents.write(key, corrected, { kind: 'person', userId: 'U1', name: 'Ada' }, 1);
    const other = { spaceId: key.spaceId, sessionKey: '', path: 'notes.md' };
    await stores.documents.write(other, '- Postgres 16\n', { kind: 'person', userId: 'U1', name: 'Ada' }, 0);
    const refusals = [
      await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: '- the database is Postgres 15' }),
      await call('memory_edit', { path: 'MAIN.md', old_text: 'Postgres 16', new_text: 'Postgres 15' }),
      await call('memory_delete', { path: 'notes.md' }),
    ];
    for (const refusal of refusals) expect(refusal.content).toMatch(/^Error: invalid arguments for memory_\w+: expected_version: required: pass the version you read/);
    expect(await read()).toBe(corrected);
    expect((await stores.documents.read(other))?.deleted).toBe(false);
    // With the version it read, the write is refused as stale and the person's line stays.
    expect((await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: '- Postgres 15', expected_version: 1 })).content).toMatch(/^Error: MAIN\.md changed since you read it/);
    expect(await read()).toBe(corrected);
  });
});
