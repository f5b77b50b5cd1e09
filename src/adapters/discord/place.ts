// Where a Discord message or interaction happened, as far as Hippo cares: a DM (a session of its
// own), a guild thread (a session, or one to start), a text channel (a mention starts a thread), or
// somewhere Hippo does not work (voice, forum posts' parents, …).
import { ChannelType, PermissionFlagsBits, type AnyThreadChannel, type Channel, type Client, type GuildBasedChannel, type NewsChannel, type Role, type TextChannel } from 'discord.js';
import type { ThreadAddress, Visibility } from '../../core/store.js';
import { dmAddress, threadAddress } from './ids.js';

/** A resolved place. */
export type Place =
  | { kind: 'dm'; address: ThreadAddress }
  | { kind: 'thread'; address: ThreadAddress; thread: AnyThreadChannel }
  | { kind: 'channel'; channel: TextChannel | NewsChannel }
  | { kind: 'other' };

/** Resolves a channel (fetching it when it is unknown or partial) to a place. */
export async function placeOf(client: Client, channelId: string, known: Channel | null): Promise<Place> {
  let channel = known ?? (await fetchChannel(client, channelId));
  if (!channel) return { kind: 'other' };
  if (channel.type === ChannelType.DM) return { kind: 'dm', address: dmAddress(channel.id) };
  if (channel.isThread()) {
    // A thread first seen in a message event can lack its parent: ask Discord.
    if (!channel.parentId) channel = (await fetchChannel(client, channelId, true)) ?? channel;
    if (!channel.isThread() || !channel.parentId) return { kind: 'other' };
    return { kind: 'thread', address: threadAddress(channel.guildId, channel.parentId, channel.id, visibilityOf(channel)), thread: channel };
  }
  if (channel.type === ChannelType.GuildText || channel.type === ChannelType.GuildAnnouncement) return { kind: 'channel', channel };
  return { kind: 'other' };
}

/** The session address of a channel, or null where no session can live (a plain text channel). */
export async function addressOf(client: Client, channelId: string, known: Channel | null): Promise<ThreadAddress | null> {
  const place = await placeOf(client, channelId, known);
  return place.kind === 'dm' || place.kind === 'thread' ? place.address : null;
}

/**
 * Invited for a private thread (only its members read it: a memory space of its own); public only
 * when @everyone can view the thread's channel, as Discord computes it from the @everyone role's
 * permissions and the channel's overwrites together (a server where @everyone sees nothing and a
 * Staff role opens one channel makes that channel private, not only an @everyone deny), and can
 * view its category too (a channel under a hidden category counts as hidden, synced or not).
 * Anything unknown (parent, guild, role) counts as private: the safe side.
 */
function visibilityOf(thread: AnyThreadChannel): Visibility {
  if (thread.type === ChannelType.PrivateThread) return 'invited';
  const parent = thread.parent;
  if (!parent) return 'private';
  const everyone = parent.guild.roles.everyone;
  const category = parent.parentId === null ? null : parent.parent;
  if (parent.parentId !== null && !category) return 'private';
  return everyoneCanView(parent, everyone) && (!category || everyoneCanView(category, everyone)) ? 'public' : 'private';
}

/** Can @everyone view the channel (its role's permissions with the channel's overwrites, admin included)? */
function everyoneCanView(channel: GuildBasedChannel, everyone: Role | undefined): boolean {
  if (!everyone || !('permissionsFor' in channel)) return false;
  return channel.permissionsFor(everyone).has(PermissionFlagsBits.ViewChannel);
}

async function fetchChannel(client: Client, channelId: string, force = false): Promise<Channel | null> {
  try {
    return await client.channels.fetch(channelId, { force });
  } catch {
    return null; // gone, or no access: nothing Hippo can work in
  }
}
