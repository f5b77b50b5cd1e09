// Who can read the conversation a new Slack session starts in, which decides its memory space
// (MEMORY_SCOPE=workspace: public channels share one space, the workspace's full members').
import type { Visibility } from '../../core/store.js';
import type { SlackContext } from './context.js';
import { withTimeout } from './people.js';

/** Longest wait for the starter's kind (users.info, cached) on the ack path (ms). */
const starterLookupMs = 1_000;

/**
 * The channel's visibility (shared for Slack Connect), and `shared` as well for a public channel
 * when the person starting the session is not a full member of the workspace (a guest, someone
 * from another organisation): the space every public channel shares is not theirs to read, so
 * their session runs on the channel's own space instead. A look-up that fails or is late counts
 * as "not a full member" (the safe side). Other scopes key spaces by channel or thread anyway.
 */
export async function sessionVisibility(context: Pick<SlackContext, 'people' | 'memory'>, teamId: string, channelId: string, channelType: string | undefined, userId: string): Promise<Visibility> {
  const [visibility, fullMember] = await Promise.all([
    context.people.visibility(teamId, channelId, channelType),
    withTimeout(context.memory.isWorkspaceMember(teamId, userId), starterLookupMs).catch(() => false),
  ]);
  return visibility === 'public' && !fullMember ? 'shared' : visibility;
}
