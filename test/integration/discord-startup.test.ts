// Start-up of the Discord adapter when Discord refuses: the privileged Message Content intent not
// enabled (gateway close 4014) stops the process with one line saying where to enable it; a
// refused token likewise. Also: commands go to the guilds in DISCORD_GUILD_IDS.
import { createChatStorage } from '../../src/adapters/storage/chat-storage.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disallowedIntentsMessage, invalidTokenMessage, startDiscordAdapter } from '../../src/adapters/discord/index.js';
import { parseConfig, type Config } from '../../src/config.js';
import { ConfigError } from '../../src/core/errors.js';
import { createLogger } from '../../src/log.js';
import { startFakeDiscord } from '../fakes/fake-discord.js';
import { messageContentIntent } from '../fakes/fake-discord-gateway.js';
import { createAgentHarness, type AgentHarness } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startScript } from '../support/processes.js';

let database: TestDatabase;
let harness: AgentHarness;
const log = createLogger('silent');

beforeAll(async () => {
  database = await createTestDatabase();
  harness = await createAgentHarness({ database });
});
afterAll(async () => {
  await harness.close();
  await database.drop();
});

function configFor(apiUrl: string, extra: Record<string, string> = {}): Config {
  const parsed = parseConfig({ DISCORD_BOT_TOKEN: 'fake-bot-token', DISCORD_API_URL: apiUrl, ...extra });
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  return parsed.config;
}

describe('Discord start-up', () => {
  it('exits non-zero with one line on how to enable Message Content when Discord answers 4014', async () => {
    const fake = await startFakeDiscord({ disallowMessageContent: true });
    try {
      // The real entry point (npm start), as an operator would run it.
      const child = startScript('src/main.ts', {
        DATABASE_URL: database.url, PORT: '0', DISCORD_BOT_TOKEN: 'fake-bot-token', DISCORD_API_URL: fake.apiUrl,
        OPENAI_API_KEY: 'test-key', MODEL: 'test-model', TOOLS: 'memory', LOG_LEVEL: 'silent',
      });
      const { code } = await child.exited;
      expect(code).toBe(1);
      expect(child.stderr()).toBe(`${disallowedIntentsMessage}\n`);
      expect(disallowedIntentsMessage).toContain('Developer Portal → your application → Bot → Privileged Gateway Intents → Message Content Intent');
      expect(fake.gateway.closeCodes).toEqual([4014]);
      expect((fake.gateway.identifies[0]?.intents ?? 0) & messageContentIntent).toBe(messageContentIntent);
      expect(fake.callsTo('PUT', /commands$/)).toHaveLength(0);
    } finally {
      await fake.close();
    }
  });

  it('rejects start() with a ConfigError for 4014 and for a refused token, and never logs the token', async () => {
    const lines: string[] = [];
    const capture = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const refusing = await startFakeDiscord({ disallowMessageContent: true });
    const rejected = await startDiscordAdapter({ config: configFor(refusing.apiUrl), agent: harness.agent, stores: harness.stores, storage: createChatStorage(database.prisma, database.pool), log: capture }).catch((error: unknown) => error);
    expect(rejected).toBeInstanceOf(ConfigError);
    expect((rejected as Error).message).toBe(disallowedIntentsMessage);
    await refusing.close();

    const unauthorised = await startFakeDiscord();
    unauthorised.fail('GET', /^\/gateway\/bot$/, 401, { message: '401: Unauthorized', code: 0 });
    const refused = await startDiscordAdapter({ config: configFor(unauthorised.apiUrl), agent: harness.agent, stores: harness.stores, storage: createChatStorage(database.prisma, database.pool), log: capture }).catch((error: unknown) => error);
    expect((refused as Error).message).toBe(invalidTokenMessage);
    expect(unauthorised.gateway.identifies).toHaveLength(0);
    await unauthorised.close();
    expect(lines.join('\n')).not.toContain('fake-bot-token');
  });

  it('registers /hippo in each guild of DISCORD_GUILD_IDS instead of globally, skipping a guild that refuses', async () => {
    const fake = await startFakeDiscord();
    fake.fail('PUT', /\/guilds\/333\/commands$/, 403, { message: 'Missing Access', code: 50001 });
    const adapter = await startDiscordAdapter({ config: configFor(fake.apiUrl, { DISCORD_GUILD_IDS: '111, 333,222' }), agent: harness.agent, stores: harness.stores, storage: createChatStorage(database.prisma, database.pool), log });
    try {
      expect(adapter.connected()).toBe(true);
      const calls = fake.callsTo('PUT', /^\/applications\/\d+\/guilds\/\d+\/commands$/);
      expect(calls.map((call) => [call.path.split('/')[4], call.status])).toEqual([['111', 200], ['333', 403], ['222', 200]]);
      expect(fake.callsTo('PUT', /^\/applications\/\d+\/commands$/)).toHaveLength(0);
    } finally {
      await adapter.stop();
      await fake.close();
    }
    expect(adapter.connected()).toBe(false);
  });
});
