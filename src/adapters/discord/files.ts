// Files on Discord (docs/product.md "Share files"): attachments of people's messages are downloaded from
// Discord's CDN for the session workspace; files the agent attaches to an answer go out as message
// attachments (Attach Files permission).
import type { Message } from 'discord.js';
import type { Attachment } from '../../core/store.js';
import { readCapped, type AttachmentFetcher } from '../../tools/workspace-attachments.js';

/** The attachments of a message, as core names them. */
export function discordAttachments(message: Message): Attachment[] {
  return [...message.attachments.values()].map((attachment) => ({
    name: attachment.name, mimeType: attachment.contentType ?? null, size: attachment.size, ref: attachment.id, url: attachment.url,
  }));
}

/**
 * Downloads an attachment from Discord's CDN (no token is sent). Only Discord's file hosts, or
 * the configured API's origin (a proxy), are fetched from: a message's URL is not a free pass.
 */
export function discordFileFetcher(apiUrl: string | undefined): AttachmentFetcher {
  const allowed = new Set(['https://cdn.discordapp.com', 'https://media.discordapp.net', ...(apiUrl ? [new URL(apiUrl).origin] : [])]);
  return async (attachment, { signal, maxBytes }) => {
    if (!attachment.url) throw new Error(`attachment ${attachment.ref} has no URL`);
    const origin = new URL(attachment.url).origin;
    if (!allowed.has(origin)) throw new Error(`refusing to fetch an attachment from ${origin}`);
    const response = await fetch(attachment.url, { signal, redirect: 'error' });
    if (!response.ok) throw new Error(`Discord's CDN answered ${response.status} for attachment ${attachment.ref}`);
    return { bytes: await readCapped(response, maxBytes) };
  };
}
