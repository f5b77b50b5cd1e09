// Slack installations in Postgres (many-workspace mode): what the OAuth flow stores, what the
// adapter reads to talk to a workspace, and the locked refresh of rotating tokens. Tokens are
// sealed with the SecretBox (bound to the team id) before they reach the database and opened
// only in memory; nothing here logs them. Implements Bolt's InstallationStore, so @slack/oauth's
// InstallProvider stores what it receives from oauth.v2.access here.
import type { Installation, InstallationQuery, InstallationStore } from '@slack/bolt';
import type { SecretBox } from '../storage/secret-box.js';
import type { PrismaClient, SlackInstallation } from '../../../prisma/generated/client.js';

/** An installation with its tokens opened. */
export interface StoredInstallation {
  teamId: string;
  teamName: string;
  enterpriseId: string | null;
  appId: string;
  botUserId: string;
  botId: string;
  botScopes: string[];
  botToken: string;
  botRefreshToken: string | null;
  botTokenExpiresAt: Date | null;
  installedBy: string;
}

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
    private readonly prisma: PrismaClient,
    private readonly box: SecretBox,
  ) {}

  /** Stores (or replaces, on a reinstall) a workspace installation; org-wide installs are refused. */
  async storeInstallation<AuthVersion extends 'v1' | 'v2'>(installation: Installation<AuthVersion, boolean>): Promise<void> {
    const teamId = installation.team?.id;
    const bot = installation.bot;
    if (!teamId || installation.isEnterpriseInstall) throw new Error('only workspace installations are supported (not org-wide ones)');
    if (!bot) throw new Error('the installation has no bot token (the bot scopes were not granted)');
    const data = {
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
    };
    await this.prisma.slackInstallation.upsert({ where: { teamId }, create: { teamId, ...data }, update: data });
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
    const row = await this.prisma.slackInstallation.findUnique({ where: { teamId } });
    return row ? this.opened(row) : null;
  }

  /** Deletes the installation (its tokens with it); false when there was none. */
  async delete(teamId: string): Promise<boolean> {
    return (await this.prisma.slackInstallation.deleteMany({ where: { teamId } })).count > 0;
  }

  /**
   * Refreshes the bot token under a row lock, so replicas refresh one at a time: whoever comes
   * second finds the row refreshed (`stillDue` false) and uses it. `exchange` calls Slack while
   * the lock is held; a failure leaves the row as it was. Null when the installation is gone.
   */
  async refresh(teamId: string, stillDue: (installation: StoredInstallation) => boolean, exchange: (refreshToken: string) => Promise<RefreshedTokens>): Promise<StoredInstallation | null> {
    return this.prisma.$transaction(async (tx) => {
      // The lock first, then the row as the lock holder before us left it.
      await tx.$queryRaw`SELECT 1 FROM slack_installations WHERE team_id = ${teamId} FOR UPDATE`;
      const row = await tx.slackInstallation.findUnique({ where: { teamId } });
      if (!row) return null;
      const current = this.opened(row);
      if (!current.botRefreshToken || !stillDue(current)) return current;
      const tokens = await exchange(current.botRefreshToken);
      const expiresAt = new Date(Date.now() + tokens.expiresIn * 1000);
      await tx.slackInstallation.update({
        where: { teamId },
        data: { botToken: this.box.seal(tokens.botToken, teamId), botRefreshToken: this.box.seal(tokens.botRefreshToken, teamId), botTokenExpiresAt: expiresAt },
      });
      return { ...current, botToken: tokens.botToken, botRefreshToken: tokens.botRefreshToken, botTokenExpiresAt: expiresAt };
    }, { timeout: 30_000, maxWait: 10_000 });
  }

  private opened(row: SlackInstallation): StoredInstallation {
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
