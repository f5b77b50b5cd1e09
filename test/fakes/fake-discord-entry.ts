// A child-process entry point for tests: starts storage, the agent and only the Discord adapter
// the way the service does, and on a start-up error prints its one line and exits 1 like
// src/main.ts. Environment: the usual Hippo variables (DATABASE_URL, DISCORD_*, OPENAI_*, MODEL).
import { startDiscordAdapter } from '../../src/adapters/discord/index.js';
import { openDatabase } from '../../src/adapters/storage/database.js';
import { buildAgent } from '../../src/build-agent.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';

const parsed = parseConfig(process.env);
if (!parsed.ok) {
  for (const line of parsed.errors) process.stderr.write(`${line}\n`);
  process.exit(1);
}
const { config } = parsed;
const log = createLogger(config.LOG_LEVEL);
const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
let code = 0;
try {
  const built = await buildAgent({ config, database, log, environment: {} });
  const adapter = await startDiscordAdapter({ config, agent: built.agent, stores: built.stores, prisma: database.prisma, log });
  log.info('discord-adapter-started');
  await adapter.stop();
  await built.agent.stop(1_000);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  code = 1;
}
await database.close();
process.exit(code);
