// Memory export at its cap (docs/security.md "Security and limits"): one document with 2,000 versions of 50 KiB
// (issue #41's probe), exported three at once, three rounds (the first cold); prints wall time, the
// event loop's delay (monitorEventLoopDelay: max, p99, mean) and the zip's size with the machine.
// Not in `bench/run.ts`; the figures go to RESULTS.md by hand.
//   npx tsx bench/export-stall.ts
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { memoryExportFile } from '../src/adapters/chat/memory-export.js';
import { createPrismaStores } from '../src/adapters/storage/prisma-stores.js';
import { createPostgresBenchDatabase } from './support/bench-database.js';
import { runEnvironment } from './support/report.js';

const bench = await createPostgresBenchDatabase();
try {
  const prisma = bench.database.prisma;
  const stores = createPrismaStores(prisma);
  const { session } = await stores.sessions.open({ platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadKey: '1.0001' }, { title: 'bench', scope: 'channel' });
  const first = await stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'notes/big.md' }, 'v1', { kind: 'system' }, 0);
  await prisma.$executeRaw`
    INSERT INTO memory_document_versions (id, document_id, version, path, content, author_kind, author_id)
    SELECT gen_random_uuid()::text, ${first.id}, n, 'notes/big.md',
           (SELECT string_agg(md5(n::text || '-' || k::text), ' ') FROM generate_series(1, 1552) AS k), 'summarizer', 'run-' || n
    FROM generate_series(2, 2001) AS n`;
  await prisma.$executeRaw`UPDATE memory_documents SET version = 2001, content = 'latest' WHERE id = ${first.id}`;
  for (let round = 1; round <= 3; round += 1) {
    const stall = monitorEventLoopDelay({ resolution: 5 });
    stall.enable();
    const started = performance.now();
    const files = await Promise.all([1, 2, 3].map(() => memoryExportFile(stores.documents, session.memorySpaceId)));
    stall.disable();
    const ms = (nanoseconds: number) => `${(nanoseconds / 1e6).toFixed(1)} ms`;
    console.log(`round ${round}, three exports at once: ${(performance.now() - started).toFixed(0)} ms; event-loop delay max ${ms(stall.max)}, p99 ${ms(stall.percentile(99))}, mean ${ms(stall.mean)}; zip ${files[0]?.data.length} bytes`);
  }
  console.log(JSON.stringify(runEnvironment()));
} finally {
  await bench.drop();
}
