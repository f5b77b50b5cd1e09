// A workspace that uninstalls Hippo (app_uninstalled) or revokes its bot token (tokens_revoked):
// its installation and tokens are deleted at once, so its later events are acknowledged and
// ignored (Bolt's authorize finds no installation) and whatever its sessions still owe is dropped
// by the outbox sender (workspace_not_installed) instead of being retried against a dead token.
// Bolt delivers these two events without authorizing them (there is no token left to find).
import type { SlackRoutes } from '../routes.js';
import { z } from 'zod';
import { eventEnvelope } from '../payloads.js';
import type { SlackContext } from '../context.js';
import type { SlackInstallationStore } from './installation-store.js';

const tokensRevoked = z.looseObject({ tokens: z.looseObject({ bot: z.array(z.string()).optional() }).optional() });

/** Registers the uninstall and revocation handlers. `installations` is null with SLACK_BOT_TOKEN. */
export function registerUninstall(routes: SlackRoutes, context: SlackContext, installations: SlackInstallationStore | null): void {
  const gone = async (body: unknown, reason: string): Promise<void> => {
    const envelope = eventEnvelope.safeParse(body);
    if (!envelope.success) return;
    const teamId = envelope.data.team_id;
    context.workspaces.forget(teamId);
    if (!installations) {
      context.log.error({ teamId, reason }, 'slack-uninstalled: SLACK_BOT_TOKEN no longer works; reinstall the app and set the new token');
      return;
    }
    const deleted = await installations.delete(teamId);
    context.log.warn({ teamId, reason, deleted }, 'slack-uninstalled: installation and tokens deleted');
  };
  routes.event('app_uninstalled', async ({ body }) => gone(body, 'app_uninstalled'));
  routes.event('tokens_revoked', async ({ event, body }) => {
    // Only the bot token matters: Hippo keeps no user tokens.
    const revoked = tokensRevoked.safeParse(event);
    if (revoked.success && (revoked.data.tokens?.bot?.length ?? 0) > 0) await gone(body, 'tokens_revoked');
  });
}
