// Files on Slack (docs/product.md "Share files"): shared files are downloaded with the bot token (files:read)
// for the session workspace, and files the agent attaches to an answer are uploaded
// (files:write: files.getUploadURLExternal, the bytes, files.completeUploadExternal).
import { webApi } from '@slack/bolt';
import { z } from 'zod';
import type { Attachment } from '../../core/store.js';
import { PlatformError } from '../../core/errors.js';
import { readCapped, type AttachmentFetcher } from '../../tools/workspace-attachments.js';
import type { MessageEvent } from './payloads.js';
import { WorkspaceNotInstalledError, type SlackWorkspaces } from './workspaces/workspaces.js';

const fileInfo = z.looseObject({
  file: z.looseObject({ name: z.string().optional(), mimetype: z.string().optional(), url_private_download: z.string().optional(), url_private: z.string().optional() }),
});
const uploadUrl = z.looseObject({ upload_url: z.string(), file_id: z.string() });

/** The attachments of a message event (its `files`), as core names them. */
export function slackAttachments(event: MessageEvent): Attachment[] {
  return (event.files ?? []).map((file) => {
    const url = file.url_private_download ?? file.url_private;
    return { name: file.name ?? file.title ?? file.id, mimeType: file.mimetype ?? null, size: file.size ?? 0, ref: file.id, ...(url === undefined ? {} : { url }) };
  });
}

/**
 * Downloads a shared file with the bot token. The token goes only to Slack's file host (or the
 * configured API's origin, e.g. a proxy); a URL elsewhere is refused. Slack answers a request it
 * does not authorise with a web page, which is refused too rather than saved as the file.
 */
export function slackFileFetcher(workspaces: Pick<SlackWorkspaces, 'get'>, apiUrl: string | undefined): AttachmentFetcher {
  const allowed = new Set(['https://files.slack.com', ...(apiUrl ? [new URL(apiUrl).origin] : [])]);
  return async (attachment, { signal, maxBytes, workspaceId }) => {
    // The token of the session's workspace: a file shared there is readable with it alone.
    const workspace = await workspaces.get(workspaceId);
    if (!workspace?.client.token) throw new WorkspaceNotInstalledError(workspaceId);
    const { client, client: { token } } = workspace;
    // Some shares arrive without their URLs, name or type ("check_file_info"): files.info has them.
    const info = attachment.url ? null : await fileDetails(client, attachment.ref);
    const url = attachment.url ?? info?.url ?? '';
    if (!allowed.has(new URL(url).origin)) throw new Error(`refusing to send the bot token to ${new URL(url).origin}`);
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal });
    if (!response.ok) throw new Error(`Slack answered ${response.status} for file ${attachment.ref}`);
    if ((response.headers.get('content-type') ?? '').startsWith('text/html') && !(attachment.mimeType ?? '').startsWith('text/html')) {
      throw new Error(`Slack answered a web page for file ${attachment.ref} (is the files:read scope granted?)`);
    }
    const bytes = await readCapped(response, maxBytes);
    return { bytes, ...(info?.name ? { name: info.name } : {}), ...(info?.mimetype ? { mimeType: info.mimetype } : {}) };
  };
}

async function fileDetails(client: webApi.WebClient, fileId: string): Promise<{ url: string; name?: string; mimetype?: string }> {
  const { file } = fileInfo.parse(await client.apiCall('files.info', { file: fileId }));
  const url = file.url_private_download ?? file.url_private;
  if (!url) throw new Error(`files.info gave no URL for ${fileId}`);
  return { url, ...(file.name ? { name: file.name } : {}), ...(file.mimetype ? { mimetype: file.mimetype } : {}) };
}

/**
 * Uploads `bytes` as a file in the thread (in the conversation itself without `threadTs`); returns
 * its file id. The external upload is three steps; a retry after a crash between the last step and
 * the outbox's record sends it again. `channel` must be a conversation id (C…, G…, D…): Slack
 * refuses a user id here.
 */
export async function uploadFile(client: webApi.WebClient, target: { channel: string; threadTs?: string }, name: string, bytes: Buffer): Promise<string> {
  const call = async (method: string, args: Record<string, unknown>) => {
    try {
      return await client.apiCall(method, args);
    } catch (error) {
      throw new PlatformError('slack', method, error instanceof Error ? error.message : String(error), undefined, { cause: error });
    }
  };
  const { upload_url: url, file_id: fileId } = uploadUrl.parse(await call('files.getUploadURLExternal', { filename: name, length: bytes.length }));
  const response = await fetch(url, { method: 'POST', body: new Uint8Array(bytes) });
  if (!response.ok) throw new PlatformError('slack', 'upload', `the upload URL answered ${response.status}`);
  await call('files.completeUploadExternal', { files: [{ id: fileId, title: name }], channel_id: target.channel, ...(target.threadTs ? { thread_ts: target.threadTs } : {}) });
  return fileId;
}
