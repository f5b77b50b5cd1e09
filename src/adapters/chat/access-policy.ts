// Who may do what (docs/product.md "Who may do what"), the same on every platform. Lists hold platform
// ids: a person matches an entry that is their user id, or a group they belong to (a Slack user
// group, a Discord role), which the platform's Requester answers. Rules:
//   start   admin, or (ALLOWED_USERS unset or listed) and (ALLOWED_CHANNELS unset or the channel
//           is listed; `dm` lists direct messages)
//   steer   admin, or ALLOWED_USERS unset or listed. Replies, pause, resume, status, memory,
//           revert and the note buttons are all "steer": a steer resumes a paused session anyway,
//           so pausing cannot be more restricted than replying.
//   reset   (and stop, budget) may also be refused to someone who may steer: only the session's
//           starter and admins. A session from before starters were recorded: anyone who may steer.
//   help    anyone in a session's thread; where no session is, only someone who may start one there.
//   approve a tool call that waits (R23): admins, and APPROVERS when set, else the session's starter.
// Nothing here stores anything; adapters refuse before they write.

/** The lists from the configuration (empty = unset). */
export interface AccessLists {
  allowedUsers: readonly string[];
  allowedChannels: readonly string[];
  adminUsers: readonly string[];
  /** Slack teams and Discord guilds Hippo works in (ALLOWED_WORKSPACES); it ignores the rest. */
  allowedWorkspaces?: readonly string[];
  /** Who decides tool calls that wait for a person (APPROVERS), besides admins; empty: the session's starter. */
  approvers?: readonly string[];
}

/** A person asking Hippo for something, as their platform knows them. */
export interface Requester {
  userId: string;
  /** True when the person belongs to the group with this id (Slack user group, Discord role). */
  inGroup(groupId: string): Promise<boolean>;
}

/** Where a session would start. */
export interface StartPlace {
  channelId: string;
  /** A direct message with Hippo (matches the `dm` entry of ALLOWED_CHANNELS). */
  direct: boolean;
}

/** Why a request was refused; `message` is what the person is told (Markdown). */
export type AccessDecision = { allowed: true } | { allowed: false; rule: 'user' | 'channel' | 'starter' | 'memory'; message: string };

/** The ALLOWED_CHANNELS entry that stands for every direct message. */
export const directMessagesEntry = 'dm';

/**
 * Command words (and their buttons) only the starter and admins may use: a reset throws away the
 * starter's context, a Stop cancels the starter's work in flight, a budget spends more money.
 */
const starterVerbs: ReadonlySet<string> = new Set(['reset', 'stop', 'budget']);
/** Command words anyone may use. */
const openVerbs: ReadonlySet<string> = new Set(['help']);

const allowed: AccessDecision = { allowed: true };

/** The refusal texts, one per rule. */
export const refusals = {
  user: "You're not on the list of people who may use Hippo here, so I left this alone. Ask whoever runs Hippo to add you (or one of your groups) to `ALLOWED_USERS`.",
  channel: "Hippo doesn't start sessions in this channel. Ask whoever runs Hippo to add it to `ALLOWED_CHANNELS`, or use a channel where Hippo works.",
  memory: "This session works from the memory the workspace's members share, so guests and people from other organisations can't steer it. Mention me in a message of your own for a session of your own.",
  starter: (verb: string) => `Only the person who started this session, or a Hippo admin, may ${verb === 'budget' ? 'raise its budget' : `${verb} it`}.`,
} as const;

/** The access rules over the configured lists. */
export class AccessPolicy {
  constructor(private readonly lists: AccessLists) {}

  /** True when none of the lists is set: everyone may do everything (no lookups at all). */
  get open(): boolean {
    return this.lists.allowedUsers.length === 0 && this.lists.allowedChannels.length === 0 && this.lists.adminUsers.length === 0;
  }

  /**
   * Does Hippo work in this Slack team or Discord guild at all? Outside ALLOWED_WORKSPACES nothing
   * is answered or stored, admins included: the list bounds where the operator's money is spent.
   */
  servesWorkspace(workspaceId: string): boolean {
    return servesWorkspace(this.lists.allowedWorkspaces ?? [], workspaceId);
  }

  /** May this person start a session at this place? */
  async mayStart(requester: Requester, place: StartPlace): Promise<AccessDecision> {
    if (this.open || (await this.isAdmin(requester))) return allowed;
    if (this.lists.allowedUsers.length > 0 && !(await this.isAllowedUser(requester))) return { allowed: false, rule: 'user', message: refusals.user };
    const channels = this.lists.allowedChannels;
    const listed = channels.includes(place.channelId) || (place.direct && channels.includes(directMessagesEntry));
    if (channels.length > 0 && !listed) return { allowed: false, rule: 'channel', message: refusals.channel };
    return allowed;
  }

  /** May this person steer a session (reply, pause, resume, read its status and memory, use its notes)? */
  async maySteer(requester: Requester): Promise<AccessDecision> {
    if (this.lists.allowedUsers.length === 0 || (await this.isAllowedUser(requester)) || (await this.isAdmin(requester))) return allowed;
    return { allowed: false, rule: 'user', message: refusals.user };
  }

  /** May this person run the command word on a session started by `startedBy` (null: not recorded)? */
  async mayCommand(verb: string, requester: Requester, session: { startedBy: string | null }): Promise<AccessDecision> {
    if (openVerbs.has(verb)) return allowed;
    const steer = await this.maySteer(requester);
    if (!steer.allowed || !starterVerbs.has(verb)) return steer;
    if (session.startedBy === null || session.startedBy === requester.userId || (await this.isAdmin(requester))) return allowed;
    return { allowed: false, rule: 'starter', message: refusals.starter(verb) };
  }

  /**
   * R23: may this person approve or deny a tool call of a session started by `startedBy`? Admins
   * may; then APPROVERS when set (the starter is not one unless listed), else the starter. A
   * session whose starter was not recorded: admins and approvers only.
   */
  async mayApprove(requester: Requester, session: { startedBy: string | null }): Promise<boolean> {
    if (await this.isAdmin(requester)) return true;
    const approvers = this.lists.approvers ?? [];
    if (approvers.length > 0) return matches(approvers, requester);
    return session.startedBy !== null && session.startedBy === requester.userId;
  }

  /** True when the person is an admin (listed, or in a listed group). */
  isAdmin(requester: Requester): Promise<boolean> {
    return matches(this.lists.adminUsers, requester);
  }

  private isAllowedUser(requester: Requester): Promise<boolean> {
    return matches(this.lists.allowedUsers, requester);
  }
}

/** True when ALLOWED_WORKSPACES (`allowed`) is unset or lists the Slack team or Discord guild. */
export function servesWorkspace(allowed: readonly string[], workspaceId: string): boolean {
  return allowed.length === 0 || allowed.includes(workspaceId);
}

/** True when the person is listed, or belongs to a listed group. */
async function matches(list: readonly string[], requester: Requester): Promise<boolean> {
  if (list.length === 0) return false;
  if (list.includes(requester.userId)) return true;
  const groups = await Promise.all(list.map((entry) => requester.inGroup(entry)));
  return groups.some(Boolean);
}

/** The lists of a parsed configuration. */
export function accessLists(config: { ALLOWED_USERS: readonly string[]; ALLOWED_CHANNELS: readonly string[]; ADMIN_USERS: readonly string[]; ALLOWED_WORKSPACES: readonly string[]; APPROVERS?: readonly string[] }): AccessLists {
  return { allowedUsers: config.ALLOWED_USERS, allowedChannels: config.ALLOWED_CHANNELS, adminUsers: config.ADMIN_USERS, allowedWorkspaces: config.ALLOWED_WORKSPACES, approvers: config.APPROVERS ?? [] };
}

/**
 * Says when a refusal should be explained: once per key in `windowMs`. Keys name a message (its
 * two deliveries, app_mention and message, are explained once) or a person in a thread (a
 * stranger chatting in a session's thread is told once, not at every message). In memory only:
 * a refusal stores nothing.
 */
export class RefusalNotices {
  private readonly explained = new Map<string, number>();

  constructor(
    private readonly windowMs = 60 * 60_000,
    private readonly maxKeys = 10_000,
  ) {}

  /** True the first time a key is seen in the window. */
  shouldExplain(key: string, now = Date.now()): boolean {
    const until = this.explained.get(key);
    if (until !== undefined && until > now) return false;
    if (this.explained.size >= this.maxKeys) {
      for (const [old, expiry] of this.explained) if (expiry <= now) this.explained.delete(old);
      if (this.explained.size >= this.maxKeys) this.explained.clear();
    }
    this.explained.set(key, now + this.windowMs);
    return true;
  }
}
