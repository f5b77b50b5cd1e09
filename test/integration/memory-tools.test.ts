// The summarizer's small-edit tools on real Postgres: appending and replacing a section write a
// new version of just what changed (issue #16: summaries by edit, not rewrite).
import { describe, expect, it } from 'vitest';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { memoryTools } from '../../src/core/memory-tools.js';
import { ToolExecutor } from '../../src/core/tool-executor.js';
import { newThread } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { toolContext } from '../support/tool-context.js';

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
  const { session } = await stores.sessions.open(newThread(), { title: 't', scope: 'channel' });
  const key = { spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' };
  await stores.documents.write(key, main, { kind: 'system' }, 0);
  const executor = new ToolExecutor(memoryTools(stores));
  const context = toolContext({ role: 'summarizer', sessionId: session.id, memorySpaceId: session.memorySpaceId, memoryRunId: 'run-1' });
  const call = (name: string, args: Record<string, unknown>) => executor.execute({ id: `c-${name}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }, context);
  const read = async () => (await stores.documents.read(key))?.content;
  return { call, read };
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
    const result = await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: '- keep shards in order\n- never skip a failed step' });
    expect(result.content).toBe('MAIN.md section "Decisions" replaced (version 2).');
    expect(await read()).toBe(main.replace('- re-run a step only when its log fails\n', '- keep shards in order\n- never skip a failed step\n'));
    await call('memory_replace_section', { path: 'MAIN.md', heading: '### Details', new_body: '- shards 0–63' });
    expect(await read()).toContain('### Details\n- shards 0–63\n\n## Decisions');
  });

  it('refuses an unknown or ambiguous heading and a stale version, changing nothing', async () => {
    const { call, read } = await setUp();
    expect((await call('memory_append', { path: 'MAIN.md', heading: '## Nowhere', text: 'x' })).content).toBe('Error: no heading "## Nowhere" in MAIN.md; name one heading exactly as it is written (nothing changed)');
    expect((await call('memory_replace_section', { path: 'MAIN.md', heading: 'Decisions', new_body: 'x', expected_version: 7 })).content).toMatch(/^Error: MAIN\.md changed since you read it/);
    expect((await call('memory_append', { path: 'NOPE.md', text: 'x' })).content).toBe('Error: no memory document NOPE.md; create it with memory_write');
    expect(await read()).toBe(main);
  });
});
