// The shared chat-adapter contract (test/support/adapter-contract.ts), run against the Discord
// adapter: the real discord.js client on the fake Discord, a real agent on Postgres.
import { afterAll, beforeAll, describe } from 'vitest';
import { threadAddress } from '../../src/adapters/discord/ids.js';
import type { ThreadAddress } from '../../src/core/store.js';
import { buttonsOf, startDiscordRig, type DiscordRig } from '../fakes/fake-discord-rig.js';
import type { FakeChannel } from '../fakes/fake-discord.js';
import { runAdapterContract, eventually, type AdapterContractTarget } from '../support/adapter-contract.js';
import { lastMessageText } from '../fakes/fake-model-server.js';
import { scriptRoles } from '../support/model-script.js';

/** The last line of a message without its quote marker. */
function lastLine(text: string): string {
  return (text.split('\n').at(-1) ?? '').replace(/^> ?/, '');
}

let rig: DiscordRig;
let target: AdapterContractTarget;

beforeAll(async () => {
  rig = await startDiscordRig();
  const { fake, harness } = rig;
  const channelOf = (thread: ThreadAddress): FakeChannel => {
    const channel = fake.channels.get(thread.threadKey);
    if (!channel) throw new Error(`no Discord channel for ${thread.threadKey}`);
    return channel;
  };
  target = {
    platform: 'discord',
    limit: 2_000,
    stores: harness.stores,
    events: harness.events,
    emit: (event) => harness.deps.events.emit(event),
    answerWith: (reply) => scriptRoles(rig.model, { worker: (body) => ({ content: reply(lastLine(lastMessageText(body))) }) }),
    deliverMention: async (text) => {
      const mention = fake.say(fake.general, text, { mention: true });
      const thread = threadAddress(fake.guildId, fake.general.id, mention.id);
      await eventually(async () => (await harness.stores.sessions.find(thread)) ?? undefined, 'the session');
      return thread;
    },
    deliverReply: async (thread, text, options = {}) => {
      const reply = fake.say(channelOf(thread), text);
      await rig.settle();
      if (options.duplicate) {
        // discord.js drops a repeat of a cached message itself; the durable dedupe matters for a
        // replay after a reconnect or restart, so the repeat goes to a restarted adapter.
        fake.redeliver(reply);
        await rig.restart();
        fake.redeliver(reply);
        await rig.settle();
      }
      return `discord:${reply.channel_id}:${reply.id}`;
    },
    deliverOwnMessage: async (thread, text) => {
      const own = fake.say(channelOf(thread), text, { author: fake.bot });
      await rig.settle();
      return `discord:${own.channel_id}:${own.id}`;
    },
    deliverBotMessage: async (thread, text) => {
      const other = fake.say(channelOf(thread), text, { author: fake.otherBot });
      await rig.settle();
      return `discord:${other.channel_id}:${other.id}`;
    },
    deliverCommand: async (thread, text) => {
      const command = fake.say(channelOf(thread), text, { mention: true });
      await rig.settle();
      return `discord:${command.channel_id}:${command.id}`;
    },
    sentMessages: (thread) =>
      fake.botMessagesIn(thread.threadKey).map((message) => ({
        text: [message.content, ...message.embeds.map((embed) => String(embed['description'] ?? ''))].filter(Boolean).join('\n'),
        buttons: buttonsOf(message).map((button) => button.label),
      })),
    settle: () => rig.settle(),
  };
});
afterAll(async () => {
  await rig?.close();
});

describe('chat adapter contract: Discord', () => {
  runAdapterContract(() => target);
});
