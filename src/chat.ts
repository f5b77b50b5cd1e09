// `npm run chat`: talk to Hippo in the terminal, on the same runner and storage as the bot
// (embedded PGlite under DATA_DIR unless DATABASE_URL is set). `--thread NAME` picks a thread.
// Logs go to DATA_DIR/chat.log so they do not mix with the conversation; warnings and errors
// also show as one line in words in the chat. `/export` writes into the working directory.
import { mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ConsoleOutput } from './adapters/console/output.js';
import { runConsoleChat } from './adapters/console/chat.js';
import { chatNotices } from './adapters/console/notices.js';
import { openDatabase } from './adapters/storage/database.js';
import { buildAgent } from './build-agent.js';
import { configWarnings, missingModelSettings, spendWarnings } from './config.js';
import { createLogger, knownSecrets } from './log.js';
import { startupConfig } from './startup-config.js';

const { config, envFile } = startupConfig(process.argv, process.env, missingModelSettings);
const terminal = Boolean(process.stdin.isTTY && process.stdout.isTTY);
const output = new ConsoleOutput({ output: process.stdout, terminal });
const logPath = join(config.DATA_DIR, 'chat.log');
mkdirSync(config.DATA_DIR, { recursive: true });
const log = createLogger(config.LOG_LEVEL, pino.multistream([
  { level: config.LOG_LEVEL === 'silent' ? 'fatal' : config.LOG_LEVEL, stream: pino.destination({ dest: logPath, append: true, sync: false }) },
  { level: 'warn', stream: chatNotices(output) },
]), { secrets: knownSecrets(config) });
if (envFile) log.info({ path: envFile }, 'env-file-loaded');
const threadFlag = process.argv.indexOf('--thread');
const thread = threadFlag > 0 ? (process.argv[threadFlag + 1] ?? 'default') : 'default';

// Ctrl-C outside a terminal (kill -INT): stop like /quit but without waiting for the run; a
// second one exits at once.
const interrupt = new AbortController();
process.on('SIGINT', () => {
  if (interrupt.signal.aborted) process.exit(130);
  interrupt.abort();
});

try {
  output.line(`log: ${logPath}${envFile ? ` · settings from ${envFile}` : ''}`);
  for (const warning of [...configWarnings(config, { service: false }), ...spendWarnings(config)]) log.warn(`config-warning: ${warning}`);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
  const built = await buildAgent({ config, database, log, environment: process.env });
  // Takes over sessions a crashed process left behind once their lease expires (Postgres).
  built.agent.runners.startSweeping();
  // One look at the model endpoint, so a wrong URL or key shows before the first message.
  void built.modelHealth.checkNow();
  const end = await runConsoleChat({
    agent: built.agent,
    stores: built.stores,
    events: built.events,
    input: process.stdin,
    output,
    address: { platform: 'console', workspaceId: 'local', channelId: 'terminal', threadKey: thread },
    userName: userInfo().username || 'you',
    historyFile: join(config.DATA_DIR, 'chat-history'),
    interrupt: interrupt.signal,
  });
  // Interrupted: the run stops at its next checkpoint (or is cut after 2 s) and its lease is
  // released, so the next start resumes it at once.
  await built.agent.stop(end === 'interrupted' ? 2_000 : 5_000);
  await built.close();
  await database.close();
  log.flush();
  process.exit(0);
} catch (error) {
  output.close();
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
