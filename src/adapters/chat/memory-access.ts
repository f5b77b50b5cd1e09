// Who may do what to a memory space (docs/product.md "Memory spaces", "Who may do what"): only members of
// the conversation that owns the space may view, edit, revert or pin it, and MEMORY_EDITORS (when
// set) narrows who may change it. Platform-free: each platform says where a click came from and
// answers the membership and group questions it alone can.
import type { MemorySpaceRecord } from '../../core/store.js';

/** What a person wants to do to a space. View covers viewing, history and 👍; the others change memory. */
export type MemoryAction = 'view' | 'history' | 'edit' | 'revert' | 'pin';

/** Where an action came from and who asked. */
export interface AccessRequest {
  platform: MemorySpaceRecord['platform'];
  /** The Slack team or Discord guild ("@me" in a DM) of the interaction. */
  workspaceId: string;
  /**
   * The conversation the action came from (Slack: the channel of the clicked message; Discord: a
   * thread's parent, or the DM), or null when it came from elsewhere (Slack's App Home, a modal
   * opened there).
   */
  channelId: string | null;
  userId: string;
  /** Groups the person is in, when the platform says so with the request (Discord roles). */
  groupIds?: readonly string[];
}

/** What a platform answers for the checks. */
export interface AccessResolver {
  /**
   * Is the person a member of the conversation (a channel, or an invite-only thread)? Asked only
   * when the action came from elsewhere.
   */
  isMember(workspaceId: string, channelId: string, userId: string): Promise<boolean>;
  /**
   * Is the person a full member of the workspace (not a guest, not someone from another
   * organisation in a shared channel)? Asked for a space every public channel shares.
   */
  isWorkspaceMember(workspaceId: string, userId: string): Promise<boolean>;
  /**
   * Can people who are not full members read the conversation (guests, Slack Connect)? Absent: a
   * platform without such people (a Discord server's members are all its members).
   */
  hasOutsiders?(workspaceId: string, channelId: string): Promise<boolean>;
  /** Is the person one of these editors (their own id, a user group or a role they have)? */
  isEditor(request: AccessRequest, editors: ReadonlySet<string>): Promise<boolean>;
}

/** The outcome: allowed, or refused with the words the person reads (ephemeral). */
export type AccessDecision = { allowed: true } | { allowed: false; reason: string };

/** The MEMORY_EDITORS setting: a set of ids, or null when anyone who may view may change. */
export type MemoryEditors = ReadonlySet<string> | null;

/**
 * Parses MEMORY_EDITORS ("U1, S2,123") into a set; empty or unset → null (no narrowing). Hippo
 * admins (ADMIN_USERS) are editors too when the list is set; they still must be members of the
 * conversation: being an admin never shows a conversation's memory to someone outside it.
 */
export function parseMemoryEditors(value: string | undefined, admins: readonly string[] = []): MemoryEditors {
  const ids = (value ?? '').split(',').map((id) => id.trim()).filter((id) => id !== '');
  return ids.length > 0 ? new Set([...ids, ...admins]) : null;
}

/** Decides whether `request` may do `action` to `space`. */
export async function checkMemoryAccess(space: MemorySpaceRecord, action: MemoryAction, request: AccessRequest, resolver: AccessResolver, editors: MemoryEditors): Promise<AccessDecision> {
  if (request.platform !== space.platform || request.workspaceId !== space.workspaceId) {
    return { allowed: false, reason: 'This memory belongs to another workspace: only the people of its conversation can see or change it.' };
  }
  // null: a space every public channel of the workspace shares: its full members only (a guest
  // sees the channels they were let into, not what the whole workspace remembers).
  if (space.channelId === null && !(await resolver.isWorkspaceMember(space.workspaceId, request.userId).catch(() => false))) {
    return { allowed: false, reason: "This memory is shared by the workspace's members: guests and people from other organisations cannot see or change it." };
  }
  if (space.channelId !== null && request.channelId !== space.channelId) {
    const member = await resolver.isMember(space.workspaceId, space.channelId, request.userId).catch(() => false);
    if (!member) return { allowed: false, reason: 'This memory belongs to a conversation you are not in: only its members can see or change it.' };
  }
  if (action === 'view' || action === 'history' || editors === null) return { allowed: true };
  if (await resolver.isEditor(request, editors).catch(() => false)) return { allowed: true };
  return { allowed: false, reason: 'Only the memory editors named by MEMORY_EDITORS can edit, revert or pin memory here; you can still view it.' };
}

/**
 * Should what the space holds be shown only to the person who asked (search hits, an export),
 * not in the conversation? Yes for the space every public channel shares when people
 * the gate refuses can read the conversation (a guest, a Slack Connect member): the asker may see
 * it, they may not. A failed look-up says yes (the safe side).
 */
export async function answersPrivately(space: MemorySpaceRecord, request: Pick<AccessRequest, 'workspaceId' | 'channelId'>, resolver: AccessResolver): Promise<boolean> {
  if (space.channelId !== null || request.channelId === null || !resolver.hasOutsiders) return false;
  return resolver.hasOutsiders(request.workspaceId, request.channelId).catch(() => true);
}

/** The check bound to one platform's resolver and the editors setting. */
export interface MemoryGate {
  check(space: MemorySpaceRecord, action: MemoryAction, request: AccessRequest): Promise<AccessDecision>;
  /** See answersPrivately. */
  answersPrivately(space: MemorySpaceRecord, request: Pick<AccessRequest, 'workspaceId' | 'channelId'>): Promise<boolean>;
  /** Would the gate let this person see the space all public channels share (a full member)? False when the look-up fails. */
  isWorkspaceMember(workspaceId: string, userId: string): Promise<boolean>;
}

/** A gate for a platform. */
export function memoryGate(resolver: AccessResolver, editors: MemoryEditors): MemoryGate {
  return {
    check: (space, action, request) => checkMemoryAccess(space, action, request, resolver, editors),
    answersPrivately: (space, request) => answersPrivately(space, request, resolver),
    isWorkspaceMember: (workspaceId, userId) => resolver.isWorkspaceMember(workspaceId, userId).catch(() => false),
  };
}
