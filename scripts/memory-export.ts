// `npm run memory:export`: a memory space's documents as Markdown with front matter under
// documents/, and their versions under history/, in a zip (what `@hippo memory export` sends in
// chat, with the same caps).
//   npm run memory:export -- --platform slack --workspace T0123          lists the spaces with documents
//   npm run memory:export -- --platform console --workspace local         the terminal chat's spaces
//   npm run memory:export -- --space <id> [--out hippo-memory.zip]      writes the zip
// Uses the bot's settings (DATABASE_URL, DATA_DIR, from the environment or .env). On the embedded
// database stop the bot first: the data directory is used by one process at a time.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { exportMemorySpace } from '../src/adapters/chat/memory-export.js';
import { openDatabase } from '../src/adapters/storage/database.js';
import { createPrismaStores } from '../src/adapters/storage/prisma-stores.js';
import { parseConfig } from '../src/config.js';
import type { Platform } from '../src/core/places.js';
import { loadEnvFile } from '../src/env-file.js';
import { createLogger } from '../src/log.js';

const usage = [
  'usage: npm run memory:export -- --platform slack|discord|console --workspace ID   (lists spaces)',
  '       npm run memory:export -- --space ID [--out FILE.zip]',
  "The terminal chat's workspace is `local`: npm run memory:export -- --platform console --workspace local",
].join('\n');
/** What `npm run chat` uses as its workspace id (src/chat.ts). */
const terminalWorkspace = 'local';
const { values } = parseArgs({
  options: {
    space: { type: 'string' },
    out: { type: 'string' },
    platform: { type: 'string' },
    workspace: { type: 'string' },
    'no-env-file': { type: 'boolean', default: false },
  },
});
const platforms: readonly string[] = ['slack', 'discord', 'console'];
if (!values.space && !(values.workspace && platforms.includes(values.platform ?? ''))) {
  process.stderr.write(`${usage}\n`);
  process.exit(2);
}

try {
  loadEnvFile(process.argv, process.env);
  const parsed = parseConfig(process.env);
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  const { config } = parsed;
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log: createLogger('warn', process.stderr) });
  try {
    const stores = createPrismaStores(database.prisma);
    if (!values.space) {
      const spaces = await stores.spaces.list(values.platform as Platform, values.workspace ?? '');
      if (spaces.length === 0) {
        const hint = values.platform === 'console' && values.workspace !== terminalWorkspace ? ` (the terminal chat's workspace is \`${terminalWorkspace}\`)` : '';
        process.stdout.write(`no memory space of ${values.platform} ${values.workspace} has documents${hint}\n`);
      }
      for (const space of spaces) process.stdout.write(`${space.id}  ${space.scope}  ${space.channelId ?? '(whole workspace)'}\n`);
    } else {
      const space = await stores.spaces.get(values.space);
      if (!space) throw new Error(`no memory space ${values.space}: list them with --platform and --workspace`);
      const exported = await exportMemorySpace(stores.documents, space.id);
      const out = values.out ?? `hippo-memory-${space.id.slice(0, 8)}-${new Date().toISOString().slice(0, 10)}.zip`;
      await writeFile(out, exported.zip);
      const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
      const { left } = exported;
      const cut = left.documents + left.versions > 0 ? ` (left out past the export's cap: ${count(left.documents, 'document')}, ${count(left.versions, 'version')}; README.md in the zip lists them)` : '';
      process.stdout.write(`wrote ${out}: ${count(exported.documents, 'document')}, ${count(exported.versions, 'version')}${cut}\n`);
    }
  } finally {
    await database.close();
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
