// Installing Hippo in a Slack workspace (many-workspace mode), with @slack/oauth's InstallProvider:
//   GET /slack/install         → 302 to Slack's authorize URL with a signed `state` (an HMAC'd JWT,
//                                 10 minutes) that is also set as a cookie in the browser
//   GET /slack/oauth_redirect  → state checked against the cookie and its signature and marked
//                                 used (it works once, oauth-state-store.ts), the code exchanged
//                                 with oauth.v2.access, the installation stored (tokens sealed,
//                                 see installation-store.ts), a short page shown
// Nothing here logs a token or a secret.
import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Installation, webApi } from '@slack/bolt';
import { InstallProvider, type CodedError } from '@slack/oauth';
import type { HttpServer } from '../../../http-server.js';
import type { Logger } from '../../../log.js';
import type { SlackStore } from '../../storage/slack-store.js';
import { allowedInstallations, revokeWith, type ServesWorkspace } from './allowed-workspaces.js';
import { boltLogger } from '../bolt-logger.js';
import type { SlackInstallationStore } from './installation-store.js';
import { SingleUseStateStore, stateLifetimeSeconds } from './oauth-state-store.js';
import { botScopes } from './scopes.js';
import type { SlackWorkspaces } from './workspaces.js';

/** Where people start an install. */
export const installPath = '/slack/install';
/** Where Slack sends them back (the manifest's redirect URL). */
export const redirectPath = '/slack/oauth_redirect';

/** What the install routes need. */
export interface InstallRoutesOptions {
  http: HttpServer;
  clientId: string;
  clientSecret: string;
  /** Signs `state`; unset → derived from the client secret. */
  stateSecret: string | undefined;
  store: SlackInstallationStore;
  /** ALLOWED_WORKSPACES: installs into other teams are refused (and their token revoked). */
  serves: ServesWorkspace;
  /** Where used states are marked. */
  states: SlackStore;
  workspaces: SlackWorkspaces;
  /** Web API options (base URL, logger) for oauth.v2.access and auth.test. */
  clientOptions: webApi.WebClientOptions;
  log: Logger;
}

/** Mounts /slack/install and /slack/oauth_redirect on our HTTP server. */
export function mountInstallRoutes(options: InstallRoutesOptions): void {
  const { log, workspaces } = options;
  const installer = new InstallProvider({
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    stateStore: new SingleUseStateStore(options.states, options.stateSecret ?? derivedStateSecret(options.clientSecret)),
    stateCookieExpirationSeconds: stateLifetimeSeconds,
    installationStore: allowedInstallations(options.store, options.serves, revokeWith(options.clientOptions), log),
    installUrlOptions: { scopes: botScopes },
    // Straight to Slack's consent screen: no landing page of our own.
    directInstall: true,
    logger: boltLogger(log),
    clientOptions: options.clientOptions,
  });
  options.http.route('GET', installPath, (request, response) => installer.handleInstallPath(request, response, undefined, { scopes: botScopes }));
  options.http.route('GET', redirectPath, (request, response) =>
    installer.handleCallback(request, response, {
      success: (installation: Installation) => {
        const teamId = installation.team?.id ?? '';
        // A reinstall brings new tokens: use them from the next event on.
        workspaces.forget(teamId);
        log.info({ teamId, teamName: installation.team?.name, installedBy: installation.user.id, scopes: installation.bot?.scopes }, 'slack-installed');
        page(response, 200, 'Hippo is installed', `Hippo is installed in ${escapeHtml(installation.team?.name ?? 'your workspace')}. Invite it to a channel (<code>/invite @hippo</code>) and mention it with a request.`);
      },
      failure: (error: CodedError, _options: unknown, _request: IncomingMessage, failed: ServerResponse) => {
        log.warn({ code: error.code, err: error.message }, 'slack-install-failed');
        page(failed, 400, 'Hippo was not installed', `The installation did not complete (${escapeHtml(error.code)}). Start again from <a href="${installPath}">${installPath}</a> in the same browser.`);
      },
    }),
  );
}

/** A state secret of its own, derived from the client secret (SLACK_STATE_SECRET unset). */
export function derivedStateSecret(clientSecret: string): string {
  return createHmac('sha256', clientSecret).update('hippo:slack-oauth-state').digest('hex');
}

function page(response: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>${body}</p></body></html>`;
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  response.end(html);
}

/** Team names and error codes come from outside: escaped before they reach the page. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
