// Removes what Hippo stored about one channel (docs/operations.md, "Data retention"): its sessions
// with everything that hangs off them (contexts, steers, memory runs, model call usage, outbox
// items, leases) and the memory spaces that only that channel used (channel and thread scope) with
// their documents and versions. Workspace-scope memory is shared by every channel and is kept.
import type { PrismaClient } from '../../../prisma/generated/client.js';

/** The channel, as the platform names it. */
export interface ChannelAddress {
  platform: string;
  workspaceId: string;
  channelId: string;
}

/** What a purge removes (or, dry, would remove). */
export interface PurgeCounts {
  sessions: number;
  contextMessages: number;
  steerMessages: number;
  modelCalls: number;
  outboxItems: number;
  memorySpaces: number;
  memoryDocuments: number;
}

export interface PurgeResult {
  counts: PurgeCounts;
  /** The purged sessions' ids (their workspace directories are the caller's to remove). */
  sessionIds: string[];
  dryRun: boolean;
}

/** Counts, and unless `dryRun` deletes, the channel's rows in one transaction. */
export async function purgeChannel(prisma: PrismaClient, channel: ChannelAddress, options: { dryRun: boolean }): Promise<PurgeResult> {
  return prisma.$transaction(async (tx) => {
    const sessions = await tx.$queryRaw<Array<{ id: string }>>`
      SELECT id FROM sessions WHERE platform = ${channel.platform} AND workspace_id = ${channel.workspaceId} AND channel_id = ${channel.channelId}
      ORDER BY id`;
    const sessionIds = sessions.map((row) => row.id);
    // Channel scope: the key is the channel; thread scope: "<channel>/<thread>".
    const spaces = await tx.$queryRaw<Array<{ id: string }>>`
      SELECT id FROM memory_spaces
      WHERE platform = ${channel.platform} AND workspace_id = ${channel.workspaceId}
        AND ((scope = 'channel' AND scope_key = ${channel.channelId})
          OR (scope = 'thread' AND left(scope_key, length(${channel.channelId}) + 1) = ${channel.channelId} || '/'))`;
    const spaceIds = spaces.map((row) => row.id);
    const count = async (query: Promise<Array<{ n: bigint | number }>>) => Number((await query)[0]?.n ?? 0);
    const counts: PurgeCounts = {
      sessions: sessionIds.length,
      contextMessages: await count(tx.$queryRaw`
        SELECT count(*) AS n FROM context_messages m JOIN segments g ON g.id = m.segment_id WHERE g.session_id = ANY(${sessionIds}::text[])`),
      steerMessages: await count(tx.$queryRaw`SELECT count(*) AS n FROM steer_messages WHERE session_id = ANY(${sessionIds}::text[])`),
      modelCalls: await count(tx.$queryRaw`SELECT count(*) AS n FROM model_calls WHERE session_id = ANY(${sessionIds}::text[])`),
      outboxItems: await count(tx.$queryRaw`SELECT count(*) AS n FROM outbox WHERE session_id = ANY(${sessionIds}::text[])`),
      memorySpaces: spaceIds.length,
      memoryDocuments: await count(tx.$queryRaw`SELECT count(*) AS n FROM memory_documents WHERE space_id = ANY(${spaceIds}::text[])`),
    };
    if (!options.dryRun) {
      // Sessions first (their rows cascade); then the spaces, which sessions reference.
      await tx.$executeRaw`DELETE FROM sessions WHERE id = ANY(${sessionIds}::text[])`;
      await tx.$executeRaw`
        DELETE FROM memory_spaces ms WHERE ms.id = ANY(${spaceIds}::text[])
          AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.memory_space_id = ms.id)`;
    }
    return { counts, sessionIds, dryRun: options.dryRun };
  });
}
