// Removes what Hippo stored about one channel: `npx tsx scripts/purge-channel.ts --platform slack
// --workspace T0123 --channel C0456` shows what would go; add `--yes` to delete it. Uses the same
// settings as the bot (DATABASE_URL, DATA_DIR, read from the environment or .env). On the embedded
// database stop the bot first: the data directory is used by one process at a time.
// See docs/operations.md, "Data retention".
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { purgeChannel } from '../src/adapters/storage/channel-purge.js';
import { openDatabase } from '../src/adapters/storage/database.js';
import { parseConfig } from '../src/config.js';
import { loadEnvFile } from '../src/env-file.js';
import { createLogger } from '../src/log.js';
import { WorkspaceDisks, workspaceImagesDirectory } from '../src/tools/workspace-disks.js';
import { sessionWorkspacePath } from '../src/tools/workspace-path.js';

const usage = 'usage: npx tsx scripts/purge-channel.ts --platform slack|discord|console --workspace ID --channel ID [--yes]';
const { values } = parseArgs({
  options: {
    platform: { type: 'string' },
    workspace: { type: 'string' },
    channel: { type: 'string' },
    yes: { type: 'boolean', default: false },
    'no-env-file': { type: 'boolean', default: false },
  },
});
if (!values.platform || !values.workspace || !values.channel) {
  process.stderr.write(`${usage}\n`);
  process.exit(2);
}

try {
  loadEnvFile(process.argv, process.env);
  const parsed = parseConfig(process.env);
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  const config = parsed.config;
  const log = createLogger('warn', process.stderr);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, log });
  try {
    const channel = { platform: values.platform, workspaceId: values.workspace, channelId: values.channel };
    const result = await purgeChannel(database.prisma, channel, { dryRun: !values.yes });
    const { counts } = result;
    const what = `${counts.sessions} sessions (${counts.contextMessages} context messages, ${counts.steerMessages} steer messages, ${counts.modelCalls} model calls, ${counts.outboxItems} outbox items), ${counts.memorySpaces} memory spaces (${counts.memoryDocuments} documents)`;
    if (result.dryRun) {
      process.stdout.write(`would delete ${what} of ${channel.platform} ${channel.workspaceId}/${channel.channelId}; run again with --yes to delete\n`);
    } else {
      // A workspace on a disk of its own (docs/security.md "Workspace disks") is unmounted and its image deleted.
      const root = join(config.DATA_DIR, 'workspaces');
      const limits = { maxBytes: config.WORKSPACE_MAX_MB * 1024 * 1024, maxFiles: config.WORKSPACE_MAX_FILES, maxFileBytes: config.WORKSPACE_MAX_FILE_MB * 1024 * 1024 };
      const disks = new WorkspaceDisks({ root, images: workspaceImagesDirectory(config.DATA_DIR), limits, enabled: false, log });
      for (const id of result.sessionIds) await disks.remove(sessionWorkspacePath(root, id));
      process.stdout.write(`deleted ${what} and ${result.sessionIds.length} session workspaces of ${channel.platform} ${channel.workspaceId}/${channel.channelId}\n`);
    }
    if (config.MEMORY_SCOPE === 'workspace') {
      process.stdout.write('note: MEMORY_SCOPE=workspace: the workspace-wide memory documents may still mention this channel; review them (memory command) and revert or edit\n');
    }
  } finally {
    await database.close();
  }
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
