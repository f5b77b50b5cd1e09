// The many-workspace half of the fake Slack Web API: workspaces with their bot users, the OAuth v2
// exchange (oauth.v2.access with an authorization code or a refresh token, as Slack answers it),
// bot tokens that name their workspace (auth.test answers per token), rotating tokens that expire,
// and revoked tokens (invalid_auth). The token of a call is its Authorization header, as sent by
// @slack/web-api.
import type { IncomingHttpHeaders } from 'node:http';

/** A workspace the fake knows. */
export interface FakeWorkspace {
  teamId: string;
  teamName: string;
  botUserId: string;
  botId: string;
}

/** How an authorization code is granted. */
export interface GrantOptions {
  /** The Slack user who installs. */
  installerId?: string;
  /** Token rotation on: the bot token expires after this many seconds and comes with a refresh token. */
  expiresIn?: number;
  /** Make it an org-wide (Enterprise Grid) install. */
  enterprise?: boolean;
}

/** Seconds a refreshed token lives, as on Slack. */
const refreshedLifetime = 43_200;

interface Issued {
  teamId: string;
  expiresAt: number | null;
}

/** Workspaces, codes and tokens of the fake. */
export class FakeSlackTokens {
  readonly workspaces = new Map<string, FakeWorkspace>();
  private readonly codes = new Map<string, { teamId: string; options: GrantOptions }>();
  private readonly tokens = new Map<string, Issued>();
  private readonly refreshTokens = new Map<string, { teamId: string }>();
  private readonly revoked = new Set<string>();
  private counter = 0;

  constructor(
    readonly app: { clientId: string; clientSecret: string; appId: string },
    /** Tokens the fake did not issue (a test's SLACK_BOT_TOKEN) belong to this workspace. */
    private readonly home: FakeWorkspace,
  ) {
    this.addWorkspace(home);
  }

  addWorkspace(workspace: FakeWorkspace): void {
    this.workspaces.set(workspace.teamId, workspace);
  }

  /** A code Slack would put on the redirect after a person approved the install in `teamId`. */
  grant(teamId: string, options: GrantOptions = {}): string {
    this.counter += 1;
    const code = `code-${teamId}-${this.counter}`;
    this.codes.set(code, { teamId, options });
    return code;
  }

  /** Tokens issued so far for a team, oldest first. */
  tokensOf(teamId: string): string[] {
    return [...this.tokens].filter(([, issued]) => issued.teamId === teamId).map(([token]) => token);
  }

  /** Makes the token (and every call with it) invalid, as an uninstall does. */
  revoke(token: string): void {
    this.revoked.add(token);
  }

  /**
   * The workspace of a call's token (the home workspace for tokens the fake did not issue); an
   * error answer for a missing, revoked or expired token.
   */
  caller(headers: IncomingHttpHeaders): FakeWorkspace | { ok: false; error: string } {
    const token = bearer(headers);
    if (!token) return { ok: false, error: 'not_authed' };
    if (this.revoked.has(token)) return { ok: false, error: 'invalid_auth' };
    const issued = this.tokens.get(token);
    if (!issued) return this.home;
    if (issued.expiresAt !== null && issued.expiresAt < Date.now()) return { ok: false, error: 'token_expired' };
    return this.workspaces.get(issued.teamId) ?? { ok: false, error: 'invalid_auth' };
  }

  /** auth.test for the call's token. */
  authTest(headers: IncomingHttpHeaders): Record<string, unknown> {
    const caller = this.caller(headers);
    if ('ok' in caller) return caller;
    return { ok: true, url: `https://${caller.teamId.toLowerCase()}.slack.com/`, team: caller.teamName, user: 'hippo', team_id: caller.teamId, user_id: caller.botUserId, bot_id: caller.botId };
  }

  /** oauth.v2.access: a code (once) or a refresh token for a bot token. */
  exchange(args: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    const basic = basicAuth(headers);
    const clientId = String(args['client_id'] ?? basic?.id ?? '');
    const clientSecret = String(args['client_secret'] ?? basic?.secret ?? '');
    if (clientId !== this.app.clientId) return { ok: false, error: 'invalid_client_id' };
    if (clientSecret !== this.app.clientSecret) return { ok: false, error: 'bad_client_secret' };
    if (args['grant_type'] === 'refresh_token') {
      const grant = this.refreshTokens.get(String(args['refresh_token'] ?? ''));
      if (!grant) return { ok: false, error: 'invalid_refresh_token' };
      // Slack's rotating tokens live 12 hours, whatever the first one was scripted to.
      const token = this.issue(grant.teamId, refreshedLifetime, true);
      return { ok: true, token_type: 'bot', access_token: token.accessToken, refresh_token: token.refreshToken, expires_in: refreshedLifetime };
    }
    const code = String(args['code'] ?? '');
    const grant = this.codes.get(code);
    if (!grant) return { ok: false, error: 'invalid_code' };
    this.codes.delete(code);
    const workspace = this.workspaces.get(grant.teamId);
    if (!workspace) return { ok: false, error: 'invalid_code' };
    const rotating = grant.options.expiresIn !== undefined;
    const token = this.issue(workspace.teamId, grant.options.expiresIn ?? null, rotating);
    return {
      ok: true, app_id: this.app.appId, token_type: 'bot', access_token: token.accessToken, bot_user_id: workspace.botUserId,
      scope: 'app_mentions:read,chat:write,commands',
      authed_user: { id: grant.options.installerId ?? 'UINSTALLER' },
      team: grant.options.enterprise ? null : { id: workspace.teamId, name: workspace.teamName },
      enterprise: grant.options.enterprise ? { id: 'E1', name: 'Grid' } : null,
      is_enterprise_install: grant.options.enterprise === true,
      ...(rotating ? { refresh_token: token.refreshToken, expires_in: grant.options.expiresIn } : {}),
    };
  }

  private issue(teamId: string, expiresIn: number | null, rotating: boolean): { accessToken: string; refreshToken: string } {
    this.counter += 1;
    const accessToken = `${rotating ? 'xoxe.xoxb' : 'xoxb'}-${teamId}-${this.counter}`;
    const refreshToken = `xoxe-1-${teamId}-${this.counter}`;
    this.tokens.set(accessToken, { teamId, expiresAt: expiresIn === null ? null : Date.now() + expiresIn * 1000 });
    if (rotating) this.refreshTokens.set(refreshToken, { teamId });
    return { accessToken, refreshToken };
  }
}

/** The bearer token of a request, or null. */
export function bearer(headers: IncomingHttpHeaders): string | null {
  const match = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''));
  return match?.[1] ?? null;
}

function basicAuth(headers: IncomingHttpHeaders): { id: string; secret: string } | null {
  const match = /^Basic (.+)$/.exec(String(headers.authorization ?? ''));
  if (!match?.[1]) return null;
  const [id = '', secret = ''] = Buffer.from(match[1], 'base64').toString('utf8').split(':');
  return { id, secret };
}
