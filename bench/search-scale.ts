// Search at scale (docs/security.md "Security and limits"): a space of 3,001 messages of about 38 KB (116 MB of
// text, the size of issue #41's probe) and 200 documents of 20 KB, searched as a person does
// (`memory search`: documents, then conversations) for a word in one message, for "a" (in every
// message), and three "a" at once. Prints wall times with the machine; no targets, not in
// `bench/run.ts` (the figures go to RESULTS.md by hand).
//   npx tsx bench/search-scale.ts        (BENCH_SEARCH_MESSAGES=3001)
import { performance } from 'node:perf_hooks';
import { searchMemory } from '../src/adapters/chat/memory-search.js';
import { createPrismaStores } from '../src/adapters/storage/prisma-stores.js';
import { createPostgresBenchDatabase } from './support/bench-database.js';
import { runEnvironment } from './support/report.js';
import { envNumber } from './support/stats.js';

const messages = envNumber('BENCH_SEARCH_MESSAGES', 3_001);
const bench = await createPostgresBenchDatabase();
try {
  const prisma = bench.database.prisma;
  const stores = createPrismaStores(prisma, { search: { perMinute: 10_000, timeoutMs: 5_000 } });
  const { session } = await stores.sessions.open({ platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: '1.0001' }, { title: 'bench', scope: 'channel' });
  const { segment } = await stores.context.load(session.id);
  const filled = performance.now();
  // In batches: each statement parses about 19 MB into stored vectors.
  for (let start = 0; start < messages; start += 500) {
    await prisma.$executeRaw`
      INSERT INTO context_messages (segment_id, seq, role, content, search_text)
      SELECT ${segment.id}, n, 'tool', '{"role":"tool","content":""}',
             repeat('a b c lorem ipsum dolor sit amet ' || n || ' consectetur adipiscing elit sed do eiusmod ', 520) || CASE WHEN n = 1234 THEN ' quokka' ELSE '' END
      FROM generate_series(${start}::int, ${Math.min(start + 499, messages - 1)}::int) AS n`;
  }
  await prisma.$executeRaw`
    INSERT INTO memory_documents (id, space_id, session_key, path, version, content, updated_at)
    SELECT gen_random_uuid()::text, ${session.memorySpaceId}, '', 'notes/' || n || '.md', 1, repeat('a memo about the plan ' || n || ' ', 900), now()
    FROM generate_series(1, 200) AS n`;
  await prisma.$executeRaw`ANALYZE context_messages`;
  await prisma.$executeRaw`ANALYZE memory_documents`;
  const [size] = await prisma.$queryRaw<Array<{ mb: number }>>`SELECT (sum(octet_length(search_text)) / 1e6)::float8 AS mb FROM context_messages`;
  console.log(`filled ${messages} messages, ${size?.mb.toFixed(1)} MB of text, in ${((performance.now() - filled) / 1000).toFixed(1)} s`);

  const time = async (label: string, work: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let run = 0; run < 3; run += 1) {
      const started = performance.now();
      await work();
      samples.push(performance.now() - started);
    }
    console.log(`${label}: ${samples.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`);
  };
  const search = (words: string, searcher: string) => () => searchMemory(stores, session.memorySpaceId, words, searcher);
  await time('a word in one message ("quokka")', search('quokka', 'p1'));
  await time('"a" (in every message)', search('a', 'p2'));
  await time('"lorem" (prefix, in every message)', search('lorem', 'p3'));
  await time('three "a" at once', () => Promise.all([search('a', 'p4')(), search('a', 'p5')(), search('a', 'p6')()]));
  console.log(JSON.stringify(runEnvironment()));
} finally {
  await bench.drop();
}
