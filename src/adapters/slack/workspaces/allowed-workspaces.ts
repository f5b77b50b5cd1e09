// ALLOWED_WORKSPACES on Slack: a request of a team that is not listed (an event, a click, a slash
// command, a modal) is acknowledged and dropped before any listener runs, so nothing of it is
// stored or answered; an install into such a team is refused after the code exchange, its new
// token revoked and nothing stored. Unset: every team the app is installed in.
import { webApi, type AnyMiddlewareArgs, type Installation, type InstallationQuery, type InstallationStore, type Middleware } from '@slack/bolt';
import type { Logger } from '../../../log.js';

/**
 * The teams a request speaks for: the one Bolt authorized it with, and the one Hippo's handlers
 * read from the body (an event's `team_id`, a click's `team.id`, a command's `team_id`).
 */
export function requestTeams(body: unknown, authorizedTeam: string | undefined): string[] {
  const fields = (typeof body === 'object' && body !== null ? body : {}) as { team_id?: unknown; team?: { id?: unknown } | null; user?: { team_id?: unknown } | null };
  const fromBody = [fields.team_id, fields.team?.id, fields.user?.team_id].find((value): value is string => typeof value === 'string' && value !== '');
  return [authorizedTeam, fromBody].filter((team): team is string => team !== undefined && team !== '');
}

/** Says whether Hippo works in a team (ALLOWED_WORKSPACES). */
export type ServesWorkspace = (teamId: string) => boolean;

/** Bolt global middleware: requests of teams not in ALLOWED_WORKSPACES go no further. */
export function allowedWorkspacesGate(serves: ServesWorkspace, log: Logger): Middleware<AnyMiddlewareArgs> {
  return async (args) => {
    const teams = requestTeams(args.body, args.context.teamId);
    if (teams.length > 0 && teams.every(serves)) return args.next();
    log.debug({ teams }, 'slack-request-ignored: workspace not in ALLOWED_WORKSPACES');
    // Events were acknowledged by Bolt already; everything else gets an empty 200 (no answer).
    if ('ack' in args && typeof args.ack === 'function') await (args.ack as () => Promise<void>)();
  };
}

/**
 * The installation store with ALLOWED_WORKSPACES in front: an install into another team throws
 * (the install page says it did not complete) after revoking the token Slack just issued, so the
 * app does not stay installed there with a token nobody holds.
 */
export function allowedInstallations(store: InstallationStore, serves: ServesWorkspace, revoke: (token: string) => Promise<unknown>, log: Logger): InstallationStore {
  return {
    storeInstallation: async <AuthVersion extends 'v1' | 'v2'>(installation: Installation<AuthVersion, boolean>) => {
      const teamId = installation.team?.id;
      if (teamId === undefined || !serves(teamId)) {
        log.warn({ teamId }, 'slack-install-refused: the workspace is not in ALLOWED_WORKSPACES');
        const token = installation.bot?.token;
        if (token) await revoke(token).catch((error: unknown) => log.warn({ teamId, err: error instanceof Error ? error.message : String(error) }, 'slack-install-refused: revoking the token failed'));
        throw new Error('this workspace is not in ALLOWED_WORKSPACES');
      }
      return store.storeInstallation(installation);
    },
    fetchInstallation: (query: InstallationQuery<boolean>) => store.fetchInstallation(query),
    ...(store.deleteInstallation ? { deleteInstallation: (query: InstallationQuery<boolean>) => store.deleteInstallation!(query) } : {}),
  };
}

/** Revokes a token with auth.revoke (the token authenticates its own revocation). */
export function revokeWith(clientOptions: webApi.WebClientOptions): (token: string) => Promise<unknown> {
  return (token) => new webApi.WebClient(token, clientOptions).auth.revoke();
}
