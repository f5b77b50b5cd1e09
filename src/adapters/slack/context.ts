// What every part of the Slack adapter works with, in one object (docs/style.md §2: a context object).
import type { Agent } from '../../core/agent.js';
import type { Stores, ThreadAddress } from '../../core/store.js';
import type { Logger } from '../../log.js';
import type { Background } from '../chat/background.js';
import type { MemoryGate } from '../chat/memory-access.js';
import type { Outbox } from '../chat/outbox.js';
import type { FeedbackStore } from '../storage/feedback-store.js';
import type { AccessPolicy, RefusalNotices } from '../chat/access-policy.js';
import type { SlackPeople } from './people.js';
import type { SlackIdentity, SlackWorkspace, SlackWorkspaces } from './workspaces/workspaces.js';
import { WorkspaceNotInstalledError } from './workspaces/workspaces.js';

export type { SlackIdentity } from './workspaces/workspaces.js';

/** The Slack adapter's shared parts. */
export interface SlackContext {
  agent: Agent;
  stores: Stores;
  /** 👍 / 👎 on answers. */
  feedback: FeedbackStore;
  outbox: Outbox;
  /** Client and bot identity per team. */
  workspaces: SlackWorkspaces;
  people: SlackPeople;
  access: AccessPolicy;
  /** Which refusals were explained lately (each is explained once per message or thread). */
  refusals: RefusalNotices;
  background: Background;
  /** Who may view and change which memory space (membership, MEMORY_EDITORS). */
  memory: MemoryGate;
  log: Logger;
}

/** The team's workspace; throws WorkspaceNotInstalledError when Hippo is not installed there. */
export async function workspaceOf(context: Pick<SlackContext, 'workspaces'>, teamId: string): Promise<SlackWorkspace> {
  const workspace = await context.workspaces.get(teamId);
  if (!workspace) throw new WorkspaceNotInstalledError(teamId);
  return workspace;
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

/**
 * A link to a Slack thread: the workspace's archive URL when auth.test named it (what
 * chat.getPermalink returns, without a call per version), else Slack's app_redirect to the channel.
 */
export function slackThreadLink(identity: Pick<SlackIdentity, 'url' | 'teamId'>, channelId: string, threadTs: string): string {
  if (identity.url) return `${identity.url.replace(/\/?$/, '/')}archives/${channelId}/p${threadTs.replace('.', '')}?thread_ts=${threadTs}&cid=${channelId}`;
  return `https://slack.com/app_redirect?team=${identity.teamId}&channel=${channelId}`;
}
