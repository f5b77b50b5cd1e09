// Display names of Slack users (users.info, cached in memory), members of user groups for the
// access lists (usergroups.users.list, cached briefly), and the one-time read of a thread that
// existed before Hippo was mentioned in it (conversations.replies). Each call uses the team's token.
import type { webApi } from '@slack/bolt';
import { z } from 'zod';
import type { Visibility } from '../../core/store.js';
import type { Logger } from '../../log.js';
import type { Requester } from '../chat/access-policy.js';
import { threadMessage } from './payloads.js';
import { WorkspaceNotInstalledError, type SlackWorkspaces } from './workspaces/workspaces.js';

const userInfo = z.looseObject({
  user: z.looseObject({
    team_id: z.string().optional(),
    is_restricted: z.boolean().optional(),
    is_ultra_restricted: z.boolean().optional(),
    is_stranger: z.boolean().optional(),
    name: z.string().optional(),
    real_name: z.string().optional(),
    profile: z.looseObject({ display_name: z.string().optional(), real_name: z.string().optional() }).optional(),
  }),
});

const channelInfo = z.looseObject({
  channel: z.looseObject({
    is_private: z.boolean().optional(), is_im: z.boolean().optional(), is_mpim: z.boolean().optional(),
    // Slack Connect (another organisation) or shared across an Enterprise Grid's workspaces.
    is_shared: z.boolean().optional(), is_ext_shared: z.boolean().optional(), is_org_shared: z.boolean().optional(), is_pending_ext_shared: z.boolean().optional(),
  }),
});

/** True when people from outside the team can read the channel (Slack Connect, another workspace of the org, or an invitation pending). */
export function sharedOutside(channel: z.infer<typeof channelInfo>['channel']): boolean {
  return Boolean(channel.is_shared || channel.is_ext_shared || channel.is_org_shared || channel.is_pending_ext_shared);
}

const groupMembers = z.looseObject({ users: z.array(z.string()).default([]) });

/** How long the members of a user group are trusted before asking Slack again (ms). */
const groupCacheMs = 60_000;

/** Limits of the thread read, in messages and characters. */
const historyLimits = { messages: 40, perMessage: 1_500, total: 12_000 };

/** Slack lookups bounded in time: the ack deadline (3 s) must hold even when Slack is slow. */
export class SlackPeople {
  private readonly names = new Map<string, Promise<string>>();
  private readonly known = new Map<string, string>();
  private readonly visibilities = new Map<string, Promise<Visibility>>();
  private readonly groups = new Map<string, { members: Promise<ReadonlySet<string>>; until: number }>();

  constructor(
    private readonly workspaces: SlackWorkspaces,
    private readonly log: Logger,
    /** Longest wait for one lookup before falling back (ms). */
    private readonly timeoutMs = 1_000,
  ) {}

  /**
   * The name an earlier lookup found, without waiting; undefined when there was none, and for a
   * guest or someone from another organisation (their messages take the path that checks the
   * session's memory space, inbound.ts).
   */
  knownName(teamId: string, userId: string): string | undefined {
    return this.known.get(`${teamId}:${userId}`);
  }

  /** The user's display name (or real name); the user id when Slack does not answer in time. */
  async name(teamId: string, userId: string): Promise<string> {
    const key = `${teamId}:${userId}`;
    let pending = this.names.get(key);
    if (!pending) {
      pending = this.client(teamId).then((client) => client.users.info({ user: userId })).then((result) => {
        const { user } = userInfo.parse(result);
        const name = user.profile?.display_name || user.profile?.real_name || user.real_name || user.name || userId;
        const fullMember = user.team_id === teamId && !user.is_restricted && !user.is_ultra_restricted && !user.is_stranger;
        if (fullMember) this.known.set(key, name);
        return name;
      });
      this.names.set(key, pending);
      // A failed lookup is retried next time instead of caching the failure.
      pending.catch(() => this.names.delete(key));
    }
    return withTimeout(pending, this.timeoutMs).catch((error: unknown) => {
      this.log.warn({ userId, err: error instanceof Error ? error.message : String(error) }, 'slack-user-lookup-failed');
      return userId;
    });
  }

  /**
   * Who can read a channel, which decides the memory space a new session may share: from the
   * event's channel type or the id's prefix when they tell, else conversations.info (cached):
   * `shared` for a public channel people of another organisation or workspace are in (Slack
   * Connect). Private when Slack does not answer in time: never share a space by mistake.
   */
  async visibility(teamId: string, channelId: string, channelType?: string): Promise<Visibility> {
    if (channelType === 'im' || channelId.startsWith('D')) return 'direct';
    if (channelType === 'mpim' || channelType === 'group' || channelId.startsWith('G')) return 'private';
    const key = `${teamId}:${channelId}`;
    let pending = this.visibilities.get(key);
    if (!pending) {
      pending = this.client(teamId).then((client) => client.conversations.info({ channel: channelId })).then((result) => {
        const { channel } = channelInfo.parse(result);
        if (channel.is_im) return 'direct';
        if (channel.is_private || channel.is_mpim) return 'private';
        return sharedOutside(channel) ? 'shared' : 'public';
      });
      this.visibilities.set(key, pending);
      pending.catch(() => this.visibilities.delete(key));
    }
    return withTimeout(pending, this.timeoutMs).catch((error: unknown) => {
      this.log.warn({ channelId, err: error instanceof Error ? error.message : String(error) }, 'slack-channel-lookup-failed');
      return 'private' as const;
    });
  }

  /**
   * The thread's messages before `beforeTs` as "Name: text" lines (newest kept when over the
   * caps), or '' when there are none or Slack does not answer in time.
   */
  async threadSoFar(teamId: string, channelId: string, threadTs: string, beforeTs: string): Promise<string> {
    try {
      const result = await withTimeout(this.client(teamId).then((client) => client.conversations.replies({ channel: channelId, ts: threadTs, limit: 200 })), this.timeoutMs * 1.5);
      const messages = z.array(threadMessage).parse(result.messages ?? []).filter((message) => Number(message.ts) < Number(beforeTs));
      const lines: string[] = [];
      let total = 0;
      for (const message of messages.slice(-historyLimits.messages).reverse()) {
        const author = message.user ? await this.name(teamId, message.user) : (message.bot_profile?.name ?? message.username ?? 'a bot');
        const text = (message.text ?? '').slice(0, historyLimits.perMessage).replace(/\n/g, '\n  ');
        const line = `${author}: ${text}`;
        if (total + line.length > historyLimits.total) break;
        total += line.length;
        lines.unshift(line);
      }
      return lines.join('\n');
    } catch (error) {
      this.log.warn({ channelId, threadTs, err: error instanceof Error ? error.message : String(error) }, 'slack-thread-read-failed');
      return '';
    }
  }

  /**
   * True when the user belongs to the user group (an `S…` id; any other id is no group). Members are
   * cached for a minute; a lookup that fails or is late counts as "not a member" (refusing is the
   * safe side) and is asked again next time.
   */
  async inGroup(teamId: string, groupId: string, userId: string): Promise<boolean> {
    if (!groupId.startsWith('S')) return false;
    const key = `${teamId}:${groupId}`;
    let cached = this.groups.get(key);
    if (!cached || cached.until < Date.now()) {
      const members = this.client(teamId)
        .then((client) => client.apiCall('usergroups.users.list', { usergroup: groupId }))
        .then((result): ReadonlySet<string> => new Set(groupMembers.parse(result).users));
      cached = { members, until: Date.now() + groupCacheMs };
      this.groups.set(key, cached);
      members.catch(() => this.groups.delete(key));
    }
    try {
      return (await withTimeout(cached.members, this.timeoutMs)).has(userId);
    } catch (error) {
      this.log.warn({ groupId, err: error instanceof Error ? error.message : String(error) }, 'slack-usergroup-lookup-failed');
      return false;
    }
  }

  /** Slack said the channel changed (shared with another organisation, or no longer): the next look-up asks again. */
  forgetChannel(teamId: string, channelId: string): void {
    this.visibilities.delete(`${teamId}:${channelId}`);
  }

  /** Slack said the user group's members changed: the next look-up asks again. */
  forgetGroup(teamId: string, groupId: string): void {
    this.groups.delete(`${teamId}:${groupId}`);
  }

  /** The person as the access policy sees them. */
  requester(teamId: string, userId: string): Requester {
    return { userId, inGroup: (groupId) => this.inGroup(teamId, groupId, userId) };
  }

  private async client(teamId: string): Promise<webApi.WebClient> {
    const workspace = await this.workspaces.get(teamId);
    if (!workspace) throw new WorkspaceNotInstalledError(teamId);
    return workspace.client;
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
