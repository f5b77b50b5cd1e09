// The space all public channels of a workspace share (MEMORY_SCOPE=workspace) is its full members':
// a session a guest or someone from another organisation starts gets the channel's own space, and
// they cannot steer a session that runs on the shared one.
import type { SessionRecord, Visibility } from '../../core/store.js';
import { refusals, type AccessDecision } from '../chat/access-policy.js';
import type { SlackContext } from './context.js';
import { withTimeout } from './people.js';

/** Longest wait for a person's kind (users.info, cached) on the ack path (ms). */
const lookupMs = 1_000;

/**
 * The channel's visibility (shared for Slack Connect), and `shared` as well for a public channel
 * when the person starting the session is not a full member of the workspace (a guest, someone
 * from another organisation): the space every public channel shares is not theirs to read, so
 * their session runs on the channel's own space instead. A look-up that fails or is late counts
 * as "not a full member" (the safe side). Other scopes key spaces by channel or thread anyway.
 */
export async function sessionVisibility(context: Pick<SlackContext, 'people' | 'memory'>, teamId: string, channelId: string, channelType: string | undefined, userId: string): Promise<Visibility> {
  const [visibility, full] = await Promise.all([
    context.people.visibility(teamId, channelId, channelType),
    fullMember(context, teamId, userId),
  ]);
  return visibility === 'public' && !full ? 'shared' : visibility;
}

/**
 * May this person steer the session as far as its memory goes? Not a guest or someone from
 * another organisation when the session runs on the space all public channels share: the worker
 * answers from that memory. Asked only off the fast path (people.knownName knows full members).
 */
export async function maySteerMemory(context: Pick<SlackContext, 'memory' | 'stores'>, session: SessionRecord, teamId: string, userId: string): Promise<AccessDecision> {
  const space = await context.stores.spaces.get(session.memorySpaceId);
  if (space && space.channelId !== null) return { allowed: true };
  return (await fullMember(context, teamId, userId)) ? { allowed: true } : { allowed: false, rule: 'memory', message: refusals.memory };
}

/** A full member of the workspace, as the memory gate asks; late or failed: no (the safe side). */
function fullMember(context: Pick<SlackContext, 'memory'>, teamId: string, userId: string): Promise<boolean> {
  return withTimeout(context.memory.isWorkspaceMember(teamId, userId), lookupMs).catch(() => false);
}
