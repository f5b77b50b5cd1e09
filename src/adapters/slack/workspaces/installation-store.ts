// Slack installations in Postgres (many-workspace mode): what the OAuth flow stores, what the
// adapter reads to talk to a workspace, and the locked refresh of rotating tokens. Tokens are
// sealed with the SecretBox (bound to the team id) before they reach the database and opened
// only in memory; nothing here logs them. Implements Bolt's InstallationStore, so @slack/oauth's
// InstallProvider stores what it receives from oauth.v2.access here.
import type { Installation, InstallationQuery, InstallationStore } from '@slack/bolt';
import type { SecretBox } from '../../storage/secret-box.js';
import type { InstallationRow, SlackStore } from '../../storage/slack-store.js';

/** An installation with its tokens opened (the row's shape, tokens in clear, in memory only). */
export type StoredInstallation = InstallationRow;

/** New tokens from a refresh (oauth.v2.access with grant_type=refresh_token). */
export interface RefreshedTokens {
  botToken: string;
  botRefreshToken: string;
  /** Seconds from now. */
  expiresIn: number;
}

/** The installation store on the slack_installations table. */
export class SlackInstallationStore implements InstallationStore {
  constructor(
    private readonly rows: SlackStore,
    private readonly box: SecretBox,
  ) {}

  /** Stores (or replaces, on a reinstall) a workspace installation; org-wide installs are refused. */
  async storeInstallation<AuthVersion extends 'v1' | 'v2'>(installation: Installation<AuthVersion, boolean>): Promise<void> {
    const teamId = installation.team?.id;
    const bot = installation.bot;
    if (!teamId || installation.isEnterpriseInstall) throw new Error('only workspace installations are supported (not org-wide ones)');
    if (!bot) throw new Error('the installation has no bot token (the bot scopes were not granted)');
    await this.rows.saveInstallation({
      teamId,
      teamName: installation.team?.name ?? '',
      enterpriseId: installation.enterprise?.id ?? null,
      appId: installation.appId ?? '',
      botUserId: bot.userId,
      botId: bot.id,
      botScopes: bot.scopes,
      botToken: this.box.seal(bot.token, teamId),
      botRefreshToken: bot.refreshToken ? this.box.seal(bot.refreshToken, teamId) : null,
      botTokenExpiresAt: bot.expiresAt ? new Date(bot.expiresAt * 1000) : null,
      installedBy: installation.user.id,
    });
  }

  /** Bolt's lookup; throws when the workspace has no installation. */
  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation<'v2', false>> {
    const stored = query.teamId ? await this.find(query.teamId) : null;
    if (!stored) throw new Error(`no Slack installation for team ${query.teamId ?? query.enterpriseId ?? '(none)'}`);
    return {
      team: { id: stored.teamId, name: stored.teamName },
      enterprise: stored.enterpriseId ? { id: stored.enterpriseId } : undefined,
      user: { token: undefined, scopes: undefined, id: stored.installedBy },
      bot: {
        token: stored.botToken, scopes: stored.botScopes, id: stored.botId, userId: stored.botUserId,
        ...(stored.botRefreshToken ? { refreshToken: stored.botRefreshToken } : {}),
        ...(stored.botTokenExpiresAt ? { expiresAt: Math.floor(stored.botTokenExpiresAt.getTime() / 1000) } : {}),
      },
      appId: stored.appId,
      tokenType: 'bot',
      isEnterpriseInstall: false,
      authVersion: 'v2',
    };
  }

  /** Bolt's removal. */
  async deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    if (query.teamId) await this.delete(query.teamId);
  }

  /** The workspace's installation with opened tokens, or null. */
  async find(teamId: string): Promise<StoredInstallation | null> {
    const row = await this.rows.findInstallation(teamId);
    return row ? this.opened(row) : null;
  }

  /** Deletes the installation (its tokens with it); false when there was none. */
  async delete(teamId: string): Promise<boolean> {
    return this.rows.deleteInstallation(teamId);
  }

  /**
   * Refreshes the bot token under a row lock, so replicas refresh one at a time: whoever comes
   * second finds the row refreshed (`stillDue` false) and uses it. `exchange` calls Slack while
   * the lock is held; a failure leaves the row as it was. Null when the installation is gone.
   */
  async refresh(teamId: string, stillDue: (installation: StoredInstallation) => boolean, exchange: (refreshToken: string) => Promise<RefreshedTokens>): Promise<StoredInstallation | null> {
    return this.rows.refreshInstallation(teamId, async (row) => {
      const current = this.opened(row);
      if (!current.botRefreshToken || !stillDue(current)) return { update: null, result: current };
      const tokens = await exchange(current.botRefreshToken);
      const expiresAt = new Date(Date.now() + tokens.expiresIn * 1000);
      return {
        update: { botToken: this.box.seal(tokens.botToken, teamId), botRefreshToken: this.box.seal(tokens.botRefreshToken, teamId), botTokenExpiresAt: expiresAt },
        result: { ...current, botToken: tokens.botToken, botRefreshToken: tokens.botRefreshToken, botTokenExpiresAt: expiresAt },
      };
    });
  }

  private opened(row: InstallationRow): StoredInstallation {
    return {
      teamId: row.teamId,
      teamName: row.teamName,
      enterpriseId: row.enterpriseId,
      appId: row.appId,
      botUserId: row.botUserId,
      botId: row.botId,
      botScopes: row.botScopes,
      botToken: this.box.open(row.botToken, row.teamId),
      botRefreshToken: row.botRefreshToken ? this.box.open(row.botRefreshToken, row.teamId) : null,
      botTokenExpiresAt: row.botTokenExpiresAt,
      installedBy: row.installedBy,
    };
  }
}
