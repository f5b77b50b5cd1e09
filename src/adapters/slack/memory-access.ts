// Slack's answers for memory access (chat/memory-access.ts): is a person a member of a channel
// (conversations.members), and are they in a user group named by MEMORY_EDITORS
// (usergroups.users.list). Both are cached briefly: App Home lists several spaces at once, and a
// person clicking through a document asks the same question again and again.
import { z } from 'zod';
import type { Logger } from '../../log.js';
import type { AccessRequest, AccessResolver } from '../chat/memory-access.js';
import { sharedOutside } from './people.js';
import { WorkspaceNotInstalledError, type SlackWorkspaces } from './workspaces/workspaces.js';

const membersPage = z.looseObject({
  members: z.array(z.string()).optional(),
  response_metadata: z.looseObject({ next_cursor: z.string().optional() }).optional(),
});
const groupUsers = z.looseObject({ users: z.array(z.string()).optional() });
const userKind = z.looseObject({
  user: z.looseObject({
    team_id: z.string().optional(),
    is_restricted: z.boolean().optional(),
    is_ultra_restricted: z.boolean().optional(),
    is_stranger: z.boolean().optional(),
  }),
});

const channelShare = z.looseObject({ channel: z.looseObject({ is_shared: z.boolean().optional(), is_ext_shared: z.boolean().optional(), is_org_shared: z.boolean().optional(), is_pending_ext_shared: z.boolean().optional() }) });

/**
 * Members of a channel asked about one by one (users.info, cached) when deciding whether it has
 * guests; a larger channel counts as having some (answers go privately there: the safe side).
 */
export const outsiderScanLimit = 100;

/** How long a membership answer is reused (ms). */
const cacheMs = 60_000;
/** Pages of conversations.members read for one channel (1,000 members each). */
const maxPages = 20;

/** Membership and user groups, from the Web API of each person's workspace. */
export class SlackAccess implements AccessResolver {
  private readonly members = new Map<string, { at: number; ids: Promise<Set<string>> }>();
  private readonly groups = new Map<string, { at: number; ids: Promise<Set<string>> }>();
  private readonly fullMembers = new Map<string, { at: number; ids: Promise<Set<string>> }>();
  private readonly outsiders = new Map<string, { at: number; ids: Promise<Set<string>> }>();

  constructor(
    private readonly workspaces: SlackWorkspaces,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async isMember(workspaceId: string, channelId: string, userId: string): Promise<boolean> {
    const ids = await this.cached(this.members, `${workspaceId}:${channelId}`, () => this.channelMembers(workspaceId, channelId));
    return ids.has(userId);
  }

  async isWorkspaceMember(workspaceId: string, userId: string): Promise<boolean> {
    // A set of one (or none), so the membership cache serves this answer too.
    const ids = await this.cached(this.fullMembers, `${workspaceId}:${userId}`, () => this.fullMember(workspaceId, userId));
    return ids.has(userId);
  }

  async hasOutsiders(workspaceId: string, channelId: string): Promise<boolean> {
    const ids = await this.cached(this.outsiders, `${workspaceId}:${channelId}`, () => this.outsidersOf(workspaceId, channelId));
    return ids.has(channelId);
  }

  async isEditor(request: AccessRequest, editors: ReadonlySet<string>): Promise<boolean> {
    if (editors.has(request.userId)) return true;
    // Slack user group ids start with S; everything else in the list is a person.
    for (const group of editors) {
      if (!group.startsWith('S')) continue;
      const ids = await this.cached(this.groups, `${request.workspaceId}:${group}`, () => this.groupMembers(request.workspaceId, group));
      if (ids.has(request.userId)) return true;
    }
    return false;
  }

  /** Slack said someone joined or left the channel, or it was shared or unshared: the next look-up asks again. */
  forgetChannel(workspaceId: string, channelId: string): void {
    this.members.delete(`${workspaceId}:${channelId}`);
    this.outsiders.delete(`${workspaceId}:${channelId}`);
  }

  /** Slack said the user group's members changed: the next look-up asks again. */
  forgetGroup(workspaceId: string, groupId: string): void {
    this.groups.delete(`${workspaceId}:${groupId}`);
  }

  private cached(cache: Map<string, { at: number; ids: Promise<Set<string>> }>, key: string, load: () => Promise<Set<string>>): Promise<Set<string>> {
    const hit = cache.get(key);
    if (hit && this.now() - hit.at < cacheMs) return hit.ids;
    const ids = load();
    cache.set(key, { at: this.now(), ids });
    // A failed look-up is not remembered: the next action asks again (and is refused meanwhile).
    ids.catch((error: unknown) => {
      if (cache.get(key)?.ids === ids) cache.delete(key);
      this.log.warn({ key, err: error instanceof Error ? error.message : String(error) }, 'slack-access-lookup-failed');
    });
    return ids;
  }

  private async client(workspaceId: string) {
    const workspace = await this.workspaces.get(workspaceId);
    if (!workspace) throw new WorkspaceNotInstalledError(workspaceId);
    return workspace.client;
  }

  private async channelMembers(workspaceId: string, channelId: string): Promise<Set<string>> {
    const client = await this.client(workspaceId);
    const ids = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page += 1) {
      const result = membersPage.parse(await client.apiCall('conversations.members', { channel: channelId, limit: 1000, ...(cursor ? { cursor } : {}) }));
      for (const id of result.members ?? []) ids.add(id);
      cursor = result.response_metadata?.next_cursor || undefined;
      if (!cursor) break;
    }
    return ids;
  }

  /** users.info: a member of this team who is neither a guest nor from another organisation. */
  private async fullMember(workspaceId: string, userId: string): Promise<Set<string>> {
    const { user } = userKind.parse(await (await this.client(workspaceId)).apiCall('users.info', { user: userId }));
    const full = user.team_id === workspaceId && !user.is_restricted && !user.is_ultra_restricted && !user.is_stranger;
    return new Set(full ? [userId] : []);
  }

  /**
   * A set holding the channel when people who are not full members can read it: it is shared
   * (Slack Connect, another workspace of the org) or one of its members is a guest or from
   * elsewhere; a channel over outsiderScanLimit members counts as having such people.
   */
  private async outsidersOf(workspaceId: string, channelId: string): Promise<Set<string>> {
    const { channel } = channelShare.parse(await (await this.client(workspaceId)).apiCall('conversations.info', { channel: channelId }));
    if (sharedOutside(channel)) return new Set([channelId]);
    const members = [...(await this.cached(this.members, `${workspaceId}:${channelId}`, () => this.channelMembers(workspaceId, channelId)))];
    if (members.length > outsiderScanLimit) return new Set([channelId]);
    for (let start = 0; start < members.length; start += 10) {
      const full = await Promise.all(members.slice(start, start + 10).map((userId) => this.isWorkspaceMember(workspaceId, userId).catch(() => false)));
      if (full.includes(false)) return new Set([channelId]);
    }
    return new Set();
  }

  private async groupMembers(workspaceId: string, groupId: string): Promise<Set<string>> {
    const result = groupUsers.parse(await (await this.client(workspaceId)).apiCall('usergroups.users.list', { usergroup: groupId }));
    return new Set(result.users ?? []);
  }
}
