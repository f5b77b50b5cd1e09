// Which token talks to which Slack workspace. One workspace (SLACK_BOT_TOKEN): the same client for
// every event. Many (OAuth installs): the team's installation from Postgres, cached briefly, its
// rotating token refreshed before it expires. Everything that calls Slack asks here per team —
// event handlers, buttons, people lookups and the outbox sender, which may send an item long
// after (and on another replica than) the event that caused it.
import type { Authorize } from '@slack/bolt';
import { webApi } from '@slack/bolt';
import { HippoError, PlatformError } from '../../../core/errors.js';
import type { Logger } from '../../../log.js';
import type { RefreshedTokens, SlackInstallationStore, StoredInstallation } from './installation-store.js';

/** Who the bot is in a workspace (auth.test, or the installation). */
export interface SlackIdentity {
  teamId: string;
  botUserId: string;
  botId: string;
  /** The workspace's URL from auth.test ("https://acme.slack.com/"), for links to threads. */
  url?: string;
}

/** A workspace Hippo can talk to. */
export interface SlackWorkspace {
  identity: SlackIdentity;
  client: webApi.WebClient;
}

/** Clients and bot identities per Slack team. */
export interface SlackWorkspaces {
  /** The team's workspace, or null when Hippo is not installed there (any more). */
  get(teamId: string): Promise<SlackWorkspace | null>;
  /** Drops what is cached for the team (after an install, uninstall or revocation). */
  forget(teamId: string): void;
  /** True with one fixed token (SLACK_BOT_TOKEN): the team does not choose the client. */
  readonly single: boolean;
}

/** A team without an installation: its events are acknowledged and ignored, its posts dropped. */
export class WorkspaceNotInstalledError extends HippoError {
  constructor(readonly teamId: string) {
    super('slack-not-installed', `Hippo is not installed in Slack workspace ${teamId}`);
  }
}

/** The one workspace of SLACK_BOT_TOKEN. */
export class SingleWorkspace implements SlackWorkspaces {
  readonly single = true;

  constructor(private readonly workspace: SlackWorkspace) {}

  get(): Promise<SlackWorkspace> {
    return Promise.resolve(this.workspace);
  }

  forget(): void {}
}

/** Tunables of InstalledWorkspaces, in milliseconds. */
export interface InstalledWorkspacesOptions {
  /** How long an installation read from Postgres is used without reading it again (default 60 s). */
  cacheMs?: number;
  /** A rotating token is refreshed when it expires sooner than this (default 15 min). */
  refreshMarginMs?: number;
}

interface Cached {
  workspace: SlackWorkspace;
  expiresAt: Date | null;
  readUntil: number;
}

/** Workspaces of the OAuth installations in Postgres. */
export class InstalledWorkspaces implements SlackWorkspaces {
  readonly single = false;
  private readonly cache = new Map<string, Cached>();
  private readonly loading = new Map<string, Promise<SlackWorkspace | null>>();
  private readonly cacheMs: number;
  private readonly refreshMarginMs: number;

  constructor(
    private readonly store: SlackInstallationStore,
    private readonly app: { clientId: string; clientSecret: string },
    private readonly clientOptions: webApi.WebClientOptions,
    private readonly log: Logger,
    options: InstalledWorkspacesOptions = {},
  ) {
    this.cacheMs = options.cacheMs ?? 60_000;
    this.refreshMarginMs = options.refreshMarginMs ?? 15 * 60_000;
  }

  async get(teamId: string): Promise<SlackWorkspace | null> {
    const cached = this.cache.get(teamId);
    if (cached && Date.now() < cached.readUntil && !this.due(cached.expiresAt)) return cached.workspace;
    // One read (and at most one refresh) per team at a time in this process.
    let pending = this.loading.get(teamId);
    if (!pending) {
      pending = this.load(teamId).finally(() => this.loading.delete(teamId));
      this.loading.set(teamId, pending);
    }
    return pending;
  }

  forget(teamId: string): void {
    this.cache.delete(teamId);
  }

  private async load(teamId: string): Promise<SlackWorkspace | null> {
    let installation = await this.store.find(teamId);
    if (installation && installation.botRefreshToken && this.due(installation.botTokenExpiresAt)) {
      installation = await this.refreshed(installation);
    }
    if (!installation) {
      this.cache.delete(teamId);
      return null;
    }
    const previous = this.cache.get(teamId);
    // The same token keeps its client (and the client's connection pool).
    const client = previous && previous.workspace.client.token === installation.botToken
      ? previous.workspace.client
      : new webApi.WebClient(installation.botToken, { ...this.clientOptions, teamId });
    const workspace: SlackWorkspace = { identity: { teamId, botUserId: installation.botUserId, botId: installation.botId }, client };
    this.cache.set(teamId, { workspace, expiresAt: installation.botTokenExpiresAt, readUntil: Date.now() + this.cacheMs });
    return workspace;
  }

  /**
   * The installation with a fresh token. When Slack refuses or cannot be reached, a token that has
   * not expired yet is still used; an expired one cannot be, and the error says whether waiting helps.
   */
  private async refreshed(installation: StoredInstallation): Promise<StoredInstallation | null> {
    const { teamId } = installation;
    try {
      const fresh = await this.store.refresh(teamId, (current) => this.due(current.botTokenExpiresAt), (refreshToken) => this.exchange(refreshToken));
      if (fresh && fresh.botToken !== installation.botToken) this.log.info({ teamId, expiresAt: fresh.botTokenExpiresAt }, 'slack-token-refreshed');
      return fresh;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const expired = installation.botTokenExpiresAt !== null && installation.botTokenExpiresAt.getTime() <= Date.now();
      this.log.warn({ teamId, err: reason, expired }, 'slack-token-refresh-failed');
      if (!expired) return installation;
      throw new PlatformError('slack', 'oauth.v2.access', `the bot token of ${teamId} expired and could not be refreshed: ${reason}`, undefined, { cause: error });
    }
  }

  private async exchange(refreshToken: string): Promise<RefreshedTokens> {
    const client = new webApi.WebClient(undefined, this.clientOptions);
    const result = await client.apiCall('oauth.v2.access', {
      client_id: this.app.clientId, client_secret: this.app.clientSecret, grant_type: 'refresh_token', refresh_token: refreshToken,
    });
    const { access_token: botToken, refresh_token: newRefreshToken, expires_in: expiresIn } = result as { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown };
    if (typeof botToken !== 'string' || typeof newRefreshToken !== 'string' || typeof expiresIn !== 'number') {
      throw new Error('oauth.v2.access answered without access_token, refresh_token and expires_in');
    }
    return { botToken, botRefreshToken: newRefreshToken, expiresIn };
  }

  private due(expiresAt: Date | null): boolean {
    return expiresAt !== null && expiresAt.getTime() - Date.now() < this.refreshMarginMs;
  }
}

/**
 * Bolt's authorize function over the workspaces: the team's token and bot identity, or
 * WorkspaceNotInstalledError (the event is acknowledged and ignored, see slack-app.ts).
 */
export function authorizeWith(workspaces: SlackWorkspaces): Authorize<boolean> {
  return async (source) => {
    const teamId = source.teamId;
    const workspace = teamId ? await workspaces.get(teamId) : null;
    const token = workspace?.client.token;
    if (!teamId || !workspace || !token) throw new WorkspaceNotInstalledError(teamId ?? source.enterpriseId ?? '(no team)');
    return { botToken: token, botId: workspace.identity.botId, botUserId: workspace.identity.botUserId, teamId };
  };
}
