// `npm run chat`: talk to Hippo in the terminal, on the same runner and storage as the bot
// (embedded PGlite under DATA_DIR unless DATABASE_URL is set). `--thread NAME` picks a thread.
import { userInfo } from 'node:os';
import { runConsoleChat } from './adapters/console/console-chat.js';
import { openDatabase } from './adapters/storage/database.js';
import { buildAgent } from './build-agent.js';
import { missingModelSettings, parseConfig } from './config.js';
import { createLogger } from './log.js';

const parsed = parseConfig(process.env);
const problems = parsed.ok ? missingModelSettings(parsed.config) : parsed.errors;
if (!parsed.ok || problems.length > 0) {
  for (const line of problems) process.stderr.write(`${line}\n`);
  process.exit(1);
}
const config = parsed.config;
// Logs go to stderr at warn level by default so they do not mix with the conversation.
const log = createLogger(process.env['LOG_LEVEL'] ? config.LOG_LEVEL : 'warn', process.stderr);
const threadFlag = process.argv.indexOf('--thread');
const thread = threadFlag > 0 ? (process.argv[threadFlag + 1] ?? 'default') : 'default';

try {
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
  const built = await buildAgent({ config, database, log, environment: process.env });
  await built.agent.recover();
  await runConsoleChat({
    agent: built.agent,
    stores: built.stores,
    events: built.events,
    input: process.stdin,
    output: process.stdout,
    address: { platform: 'console', workspaceId: 'local', channelId: 'terminal', threadKey: thread },
    userName: userInfo().username || 'you',
  });
  await built.agent.stop(5_000);
  await built.close();
  await database.close();
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
