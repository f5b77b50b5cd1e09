// The Discord adapter under test: the real adapter and discord.js client against the fake Discord,
// a real agent on a per-file Postgres database and the fake model server. One rig per test file.
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { createChatStorage } from '../../src/adapters/storage/chat-storage.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Events } from 'discord.js';
import type { FeedbackListener } from '../../src/adapters/chat/answer-feedback.js';
import { attachFileTool } from '../../src/tools/attach-file.js';
import { workspaceTools } from '../../src/tools/workspace.js';
import { WorkspaceAttachments } from '../../src/tools/workspace-attachments.js';
import { DEFAULT_WORKSPACE_LIMITS } from '../../src/tools/workspace-quota.js';
import { startDiscordAdapter, type DiscordAdapter } from '../../src/adapters/discord/index.js';
import { parseConfig, type Config } from '../../src/config.js';
import type { AnyTool } from '../../src/core/tool.js';
import type { AgentDeps } from '../../src/core/agent-context.js';
import type { MemoryScope } from '../../src/core/store.js';
import { createLogger } from '../../src/log.js';
import { createAgentHarness, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { until } from '../support/wait.js';
import { startFakeDiscord, type FakeDiscord, type FakeMessage } from './fake-discord.js';
import { startFakeModelServer, type FakeModelServer } from './fake-model-server.js';

export interface DiscordRig {
  fake: FakeDiscord;
  model: FakeModelServer;
  database: TestDatabase;
  harness: AgentHarness;
  adapter: DiscordAdapter;
  /** Where shared files are saved. */
  attachments: WorkspaceAttachments;
  config: Config;
  /** Stops the adapter and starts a new one on the same agent and database (a process restart). */
  restart(): Promise<void>;
  /** Waits until the bot posted a message in `channelId` matching `predicate`. */
  botMessage(channelId: string, predicate: (message: FakeMessage) => boolean, what?: string): Promise<FakeMessage>;
  /** Waits until the bot reacted with `emoji` on a message. */
  reaction(messageId: string, emoji: string): Promise<void>;
  /** Resolves when the client has received every dispatch sent so far and the adapter handled them. */
  settle(): Promise<void>;
  /**
   * Resolves when no session holds its lease (a live memory run keeps it): the sessions of earlier
   * tests are done, so none of their late forks takes a reply scripted for the next test.
   */
  quiet(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts everything; `contextWindow` defaults to 10,000 tokens (one 3% step = 300 tokens); `images`:
 * the model accepts images; `withFileTools`: the worker gets the workspace tools and attach_file;
 * `memoryScope`: MEMORY_SCOPE (default `channel`).
 */
export async function startDiscordRig(options: { contextWindow?: number; tools?: AnyTool[]; guildIds?: string; images?: boolean; withFileTools?: boolean; env?: (fake: FakeDiscord) => Record<string, string>; onFeedback?: FeedbackListener; approvals?: AgentDeps['approvals']; memoryScope?: MemoryScope } = {}): Promise<DiscordRig> {
  const database = await createTestDatabase();
  const model = await startFakeModelServer();
  const fake = await startFakeDiscord();
  const log = createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent');
  const workspaces = path.join(await mkdtemp(path.join(tmpdir(), 'hippo-discord-rig-')), 'workspaces');
  const images = options.images ?? false;
  const attachments = new WorkspaceAttachments({ root: workspaces, limits: DEFAULT_WORKSPACE_LIMITS, maxFileBytes: 20 * 1024 * 1024, images, imageLimits: imageLimitsFor('openai', 8), log });
  const tools = [...(options.tools ?? []), ...(options.withFileTools ? [...workspaceTools({ root: workspaces }), attachFileTool(attachments)] : [])];
  const harness = await createAgentHarness({ database, model, tools, attachments, settings: { contextWindow: options.contextWindow ?? 10_000, images, ...(options.memoryScope ? { memoryScope: options.memoryScope } : {}) }, ...(options.approvals ? { approvals: options.approvals } : {}) });
  const parsed = parseConfig({ DISCORD_BOT_TOKEN: 'fake-bot-token', DISCORD_API_URL: fake.apiUrl, ...(options.guildIds ? { DISCORD_GUILD_IDS: options.guildIds } : {}), ...options.env?.(fake) });
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  const config = parsed.config;
  const start = () => startDiscordAdapter({
    config, agent: harness.agent, stores: harness.stores, storage: createChatStorage(database.prisma, database.pool), log, attachments, ...(options.onFeedback ? { onFeedback: options.onFeedback } : {}),
    tuning: { typingIntervalMs: 200, sender: { pollMs: 20, baseBackoffMs: 20, maxBackoffMs: 200 } },
  });
  const rig: DiscordRig = {
    fake, model, database, harness, config, attachments,
    adapter: await start(),
    restart: async () => {
      await rig.adapter.stop();
      rig.adapter = await start();
    },
    botMessage: (channelId, predicate, what = 'a bot message') =>
      fake.waitFor(() => fake.botMessagesIn(channelId).find(predicate), 10_000, `${what} in ${channelId}`),
    reaction: async (messageId, emoji) => {
      await fake.waitFor(() => fake.reactions.some((entry) => entry.messageId === messageId && entry.emoji === emoji && !entry.removed), 10_000, `${emoji} on ${messageId}`);
    },
    settle: async () => {
      // The gateway delivers in order: once a marker dispatch reaches the client, everything
      // before it has been handed to the adapter's handlers.
      const marker = `${Date.now()}-${Math.random()}`;
      const client = rig.adapter.client;
      const seen = new Promise<void>((resolve) => {
        const listener = (packet: { t?: string; d?: unknown }) => {
          if (packet.t === 'HIPPO_TEST_MARKER' && packet.d === marker) {
            client.off(Events.Raw, listener);
            resolve();
          }
        };
        client.on(Events.Raw, listener);
      });
      fake.gateway.dispatch('HIPPO_TEST_MARKER', marker);
      await seen;
      await rig.adapter.idle();
    },
    quiet: async () => {
      await rig.settle();
      const { prisma } = database;
      await until(async () => (await prisma.sessionLease.count({ where: { released: false } })) === 0, 10_000, 'the sessions going idle');
      await rig.adapter.idle();
    },
    close: async () => {
      await rig.adapter.stop();
      await harness.close();
      await fake.close();
      await model.close();
      await database.drop();
    },
  };
  return rig;
}

/** The text of a bot message: content, embed descriptions and button labels, one per line. */
export function visibleText(message: FakeMessage): string {
  const embeds = message.embeds.map((embed) => String(embed['description'] ?? ''));
  return [message.content, ...embeds, ...buttonsOf(message).map((button) => button.label)].filter(Boolean).join('\n');
}

/** The buttons of a bot message. */
export function buttonsOf(message: FakeMessage): Array<{ label: string; customId: string; disabled: boolean }> {
  const rows = message.components as Array<{ components?: Array<Record<string, unknown>> }>;
  return rows.flatMap((row) => row.components ?? []).map((button) => ({
    label: String(button['label'] ?? (button['emoji'] as { name?: string } | undefined)?.name ?? ''),
    customId: String(button['custom_id'] ?? ''),
    disabled: button['disabled'] === true,
  }));
}
