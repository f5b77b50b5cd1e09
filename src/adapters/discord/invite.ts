// The bot invite link: scopes bot + applications.commands and exactly the permissions Hippo uses.
import { OAuth2Scopes, PermissionFlagsBits } from 'discord.js';

/** Permissions Hippo needs in a server (311385246784 = the sum of these flags). */
export const invitePermissions: bigint =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.SendMessagesInThreads |
  PermissionFlagsBits.CreatePublicThreads |
  PermissionFlagsBits.ReadMessageHistory |
  PermissionFlagsBits.AddReactions |
  PermissionFlagsBits.EmbedLinks |
  PermissionFlagsBits.AttachFiles |
  PermissionFlagsBits.UseApplicationCommands;

/** The OAuth2 URL that adds the bot to a server with those permissions. */
export function inviteUrl(applicationId: string): string {
  const query = new URLSearchParams({
    client_id: applicationId,
    scope: [OAuth2Scopes.Bot, OAuth2Scopes.ApplicationsCommands].join(' '),
    permissions: invitePermissions.toString(),
  });
  return `https://discord.com/oauth2/authorize?${query.toString()}`;
}
