// Who is in a channel or a user group is cached for a minute (people.ts, slack-access.ts). When
// Slack says it changed (a person joined or left a channel Hippo is in, the channel was shared with
// another organisation or no longer, a user group's members or settings changed), the cached
// answer is dropped at once: someone removed from an allowed group or
// from a channel loses access now, not a minute later.
import type { SlackRoutes } from './routes.js';
import { z } from 'zod';
import { eventEnvelope } from './payloads.js';
import type { SlackPeople } from './people.js';
import type { SlackAccess } from './memory-access.js';

const channelChange = z.looseObject({ channel: z.string() });
const groupMembersChange = z.looseObject({ subteam_id: z.string() });
const groupChange = z.looseObject({ subteam: z.looseObject({ id: z.string() }) });

/** Registers the handlers that keep the membership caches true. */
export function registerMembershipEvents(routes: SlackRoutes, caches: { people: SlackPeople; access: SlackAccess }): void {
  const forgetGroup = (body: unknown, groupId: string | undefined) => {
    const envelope = eventEnvelope.safeParse(body);
    if (!envelope.success || !groupId) return;
    caches.people.forgetGroup(envelope.data.team_id, groupId);
    caches.access.forgetGroup(envelope.data.team_id, groupId);
  };
  const forgetChannel = (body: unknown, event: unknown) => {
    const envelope = eventEnvelope.safeParse(body);
    const parsed = channelChange.safeParse(event);
    if (!envelope.success || !parsed.success) return;
    caches.access.forgetChannel(envelope.data.team_id, parsed.data.channel);
    caches.people.forgetChannel(envelope.data.team_id, parsed.data.channel);
  };
  routes.event('subteam_members_changed', async ({ event, body }) => forgetGroup(body, groupMembersChange.safeParse(event).data?.subteam_id));
  routes.event('subteam_updated', async ({ event, body }) => forgetGroup(body, groupChange.safeParse(event).data?.subteam.id));
  routes.event('member_joined_channel', async ({ event, body }) => forgetChannel(body, event));
  routes.event('member_left_channel', async ({ event, body }) => forgetChannel(body, event));
  // Shared with another organisation (Slack Connect) or no longer: new sessions and answers there change.
  routes.event('channel_shared', async ({ event, body }) => forgetChannel(body, event));
  routes.event('channel_unshared', async ({ event, body }) => forgetChannel(body, event));
}
