// Slack's many-workspace tables: installations (tokens already sealed by the caller; nothing here
// sees a token in clear) and the OAuth states a redirect has consumed.
import type { PrismaClient } from '../../../prisma/generated/client.js';

/** An installation row as stored: tokens sealed. */
export interface InstallationRow {
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

/** Sealed token fields a refresh replaces. */
export type RefreshedRow = Pick<InstallationRow, 'botToken' | 'botRefreshToken' | 'botTokenExpiresAt'>;

/** The slack_installations and slack_oauth_state_uses tables. */
export class SlackStore {
  constructor(private readonly prisma: PrismaClient) {}

  /** Stores (or replaces, on a reinstall) a workspace installation. */
  async saveInstallation(row: InstallationRow): Promise<void> {
    const { teamId, ...data } = row;
    await this.prisma.slackInstallation.upsert({ where: { teamId }, create: row, update: data });
  }

  async findInstallation(teamId: string): Promise<InstallationRow | null> {
    return this.prisma.slackInstallation.findUnique({ where: { teamId } });
  }

  /** Deletes the installation; false when there was none. */
  async deleteInstallation(teamId: string): Promise<boolean> {
    return (await this.prisma.slackInstallation.deleteMany({ where: { teamId } })).count > 0;
  }

  /**
   * Runs `refresh` on the row under a row lock, so replicas refresh one at a time: whoever comes
   * second sees the row as the first left it. `refresh` returns the new token fields (stored) or
   * null (nothing to change); a throw leaves the row as it was. Null when there is no row.
   */
  async refreshInstallation<T>(teamId: string, refresh: (row: InstallationRow) => Promise<{ update: RefreshedRow | null; result: T }>): Promise<T | null> {
    return this.prisma.$transaction(async (tx) => {
      // The lock first, then the row as the lock holder before us left it.
      await tx.$queryRaw`SELECT 1 FROM slack_installations WHERE team_id = ${teamId} FOR UPDATE`;
      const row = await tx.slackInstallation.findUnique({ where: { teamId } });
      if (!row) return null;
      const { update, result } = await refresh(row);
      if (update) await tx.slackInstallation.update({ where: { teamId }, data: update });
      return result;
    }, { timeout: 30_000, maxWait: 10_000 });
  }

  /**
   * Marks an OAuth state (by its hash) used until `expiresAt`; false when it was used already.
   * The primary key makes it atomic: of two redirects racing with one state, one inserts.
   * Marks past their expiry (their states are refused by signature by then) are removed first.
   */
  async markStateUsed(stateHash: string, expiresAt: Date, now: Date): Promise<boolean> {
    await this.prisma.slackOauthStateUse.deleteMany({ where: { expiresAt: { lt: now } } });
    const marked = await this.prisma.$executeRaw`
      INSERT INTO slack_oauth_state_uses (state_hash, expires_at) VALUES (${stateHash}, ${expiresAt})
      ON CONFLICT (state_hash) DO NOTHING`;
    return marked > 0;
  }
}
