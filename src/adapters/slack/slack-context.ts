// What every part of the Slack adapter works with, in one object (style.md §2: a context object).
import type { webApi } from '@slack/bolt';
import type { Agent } from '../../core/agent.js';
import type { Stores, ThreadAddress } from '../../core/store.js';
import type { Logger } from '../../log.js';
import type { Background } from '../chat/background.js';
import type { Outbox } from '../chat/outbox.js';
import type { PrismaClient } from '../storage/generated/client.js';
import type { SlackPeople } from './people.js';

/** Who the bot is, from auth.test. */
export interface SlackIdentity {
  teamId: string;
  botUserId: string;
  botId: string;
}

/** The Slack adapter's shared parts. */
export interface SlackContext {
  agent: Agent;
  stores: Stores;
  prisma: PrismaClient;
  outbox: Outbox;
  client: webApi.WebClient;
  identity: SlackIdentity;
  people: SlackPeople;
  background: Background;
  log: Logger;
}

/** The outbox platform name of Slack items. */
export const slackPlatform = 'slack';

/** How people address Hippo in a thread (help texts, hints). */
export const mentionPrefix = '@hippo';

/** A Slack thread as core addresses it. */
export function slackThread(teamId: string, channelId: string, threadTs: string): ThreadAddress {
  return { platform: 'slack', workspaceId: teamId, channelId, threadKey: threadTs };
}

/** The unique key of a Slack message: "slack:<team>:<channel>:<ts>". */
export function slackMessageKey(teamId: string, channelId: string, ts: string): string {
  return `slack:${teamId}:${channelId}:${ts}`;
}

/** Channel and ts of a key made by slackMessageKey, or null for another platform's key. */
export function parseSlackMessageKey(key: string): { teamId: string; channelId: string; ts: string } | null {
  const [platform, teamId, channelId, ts, ...rest] = key.split(':');
  if (platform !== 'slack' || !teamId || !channelId || !ts || rest.length > 0) return null;
  return { teamId, channelId, ts };
}
