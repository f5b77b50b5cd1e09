// Files on the fake Slack: shared files served at private URLs that need the bot token (a request
// without it gets the login page, as Slack answers), files.info, and the external upload flow
// (files.getUploadURLExternal → POST the bytes → files.completeUploadExternal, which shares the
// file in the thread as a message).
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A file someone shared, as the fake holds it. */
export interface FakeSharedFile {
  id: string;
  name: string;
  mimetype: string;
  content: Buffer;
}

/** A file Hippo uploaded, once completed. */
export interface FakeUploadedFile {
  id: string;
  title: string;
  content: Buffer;
  channel: string;
  /** Absent for a file shared in the conversation itself. */
  threadTs?: string;
}

/** A download of a shared file, with the Authorization header it carried. */
export interface FakeDownload {
  fileId: string;
  authorization: string | undefined;
}

/** The fake's file half; the API fake routes to it. */
export class FakeSlackFiles {
  readonly shared = new Map<string, FakeSharedFile>();
  readonly uploads: FakeUploadedFile[] = [];
  readonly downloads: FakeDownload[] = [];
  private readonly pending = new Map<string, { filename: string; content: Buffer | null }>();
  private counter = 0;

  constructor(
    private readonly base: () => string,
    private readonly teamId: string,
  ) {}

  /** Adds a shared file; returns its object as a message event carries it (no URLs with `checkFileInfo`). */
  add(file: { name: string; mimetype: string; content: Buffer }, options: { checkFileInfo?: boolean } = {}): Record<string, unknown> {
    this.counter += 1;
    const id = `F${String(this.counter).padStart(6, '0')}`;
    this.shared.set(id, { id, ...file });
    return options.checkFileInfo ? { id, file_access: 'check_file_info' } : this.describe(id);
  }

  /** Answers files.* Web API methods; undefined for other methods. */
  answer(method: string, args: Record<string, unknown>, share: (channel: string, threadTs: string | undefined, files: unknown[]) => void): Record<string, unknown> | undefined {
    switch (method) {
      case 'files.info': {
        const id = String(args['file']);
        return this.shared.has(id) ? { ok: true, file: this.describe(id) } : { ok: false, error: 'file_not_found' };
      }
      case 'files.getUploadURLExternal': {
        if (typeof args['filename'] !== 'string' || Number(args['length']) <= 0) return { ok: false, error: 'invalid_arguments' };
        this.counter += 1;
        const id = `FU${String(this.counter).padStart(6, '0')}`;
        this.pending.set(id, { filename: args['filename'], content: null });
        return { ok: true, upload_url: `${this.base()}/upload/${id}`, file_id: id };
      }
      case 'files.completeUploadExternal': {
        // As Slack: a conversation id (C…, G…, D…, Z…), never a user id.
        if (!/^[CGDZ][A-Z0-9]+$/.test(String(args['channel_id']))) return { ok: false, error: 'invalid_arguments' };
        const threadTs = typeof args['thread_ts'] === 'string' && args['thread_ts'] !== '' ? args['thread_ts'] : undefined;
        const files = Array.isArray(args['files']) ? (args['files'] as Array<{ id: string; title?: string }>) : [];
        const completed: unknown[] = [];
        for (const file of files) {
          const pending = this.pending.get(file.id);
          if (!pending?.content) return { ok: false, error: 'file_not_found' };
          this.pending.delete(file.id);
          const uploaded = { id: file.id, title: file.title ?? pending.filename, content: pending.content, channel: String(args['channel_id']), ...(threadTs ? { threadTs } : {}) };
          this.uploads.push(uploaded);
          completed.push({ id: uploaded.id, title: uploaded.title, name: pending.filename, size: pending.content.length });
        }
        share(String(args['channel_id']), threadTs, completed);
        return { ok: true, files: completed };
      }
      default:
        return undefined;
    }
  }

  /** Serves downloads and upload URLs; false for other paths. */
  serve(request: IncomingMessage, response: ServerResponse, body: Buffer, path: string): boolean {
    const download = /^\/files-pri\/[^/]+-(F\d+)\/([^/]+)$/.exec(path);
    if (download?.[1] && request.method === 'GET') {
      const authorization = request.headers['authorization'];
      this.downloads.push({ fileId: download[1], authorization });
      const file = this.shared.get(download[1]);
      if (!file) return reply(response, 404, 'text/plain', Buffer.from('not found'));
      // Slack answers an unauthenticated file request with its sign-in page, not an error.
      if (!authorization?.startsWith('Bearer xoxb-')) return reply(response, 200, 'text/html; charset=utf-8', Buffer.from('<html><body>Sign in to Slack</body></html>'));
      return reply(response, 200, file.mimetype, file.content);
    }
    const upload = /^\/upload\/(FU\d+)$/.exec(path);
    if (upload?.[1] && request.method === 'POST') {
      const pending = this.pending.get(upload[1]);
      if (!pending) return reply(response, 404, 'text/plain', Buffer.from('unknown upload'));
      pending.content = body;
      return reply(response, 200, 'text/plain', Buffer.from(`OK - ${body.length}`));
    }
    return false;
  }

  private describe(id: string): Record<string, unknown> {
    const file = this.shared.get(id);
    if (!file) return { id };
    const url = `${this.base()}/files-pri/${this.teamId}-${id}/${encodeURIComponent(file.name)}`;
    return { id, name: file.name, title: file.name, mimetype: file.mimetype, size: file.content.length, url_private: url, url_private_download: url };
  }
}

function reply(response: ServerResponse, status: number, type: string, body: Buffer): true {
  response.writeHead(status, { 'content-type': type, 'content-length': String(body.length) });
  response.end(body);
  return true;
}
