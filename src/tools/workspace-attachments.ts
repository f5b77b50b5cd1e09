// Files people share reach the session workspace (docs/product.md "Share files"): each chat adapter registers
// how it downloads from its platform; this saves the bytes under `files/` within the workspace
// quotas, and turns images into data URLs for models that accept them. It also reads workspace
// files back for the attachments the agent sends with its answers (attach_file).
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { formatSize } from '../core/format-size.js';
import { safeFileName } from '../core/text-hygiene.js';
import { fittedNote, type AttachmentSaver, type FittedImage, type SavedAttachment } from '../core/attachment-saver.js';
import { claimedImageType } from '../core/image-header.js';
import type { ProviderImageLimits } from '../core/image-limits.js';
import { SharpImageFitter } from './image-fitter.js';
import { ToolError } from '../core/errors.js';
import type { Attachment, Platform, SessionRecord } from '../core/store.js';
import type { Logger } from '../log.js';
import { ensureSessionWorkspace, openInWorkspace, readAtMost, resolveInWorkspace, sessionWorkspacePath } from './workspace-path.js';
import { isErrorCode } from './error-code.js';
import { checkWrite, missingParents, type WorkspaceLimits } from './workspace-quota.js';
import { workspaceFullMessage, type WorkspaceDisks } from './workspace-disks.js';

/** A downloaded file, with the name and type the platform gave when the message did not. */
export interface FetchedFile {
  bytes: Buffer;
  name?: string;
  mimeType?: string;
}

/**
 * Downloads one attachment from its platform; rejects beyond `maxBytes` (and on any failure).
 * `workspaceId`: the session's Slack team or Discord guild (whose token may fetch it).
 */
export type AttachmentFetcher = (attachment: Attachment, options: { signal: AbortSignal; maxBytes: number; workspaceId: string }) => Promise<FetchedFile>;

/** Options of WorkspaceAttachments. */
export interface WorkspaceAttachmentsOptions {
  /** Directory holding one workspace per session (DATA_DIR/workspaces). */
  root: string;
  limits: WorkspaceLimits;
  /** Largest file saved from a message or sent with an answer, in bytes (FILE_MAX_MB). */
  maxFileBytes: number;
  /** The model accepts image parts. */
  images: boolean;
  /** What the provider takes as an image (R22): larger ones are shrunk, others described. */
  imageLimits: ProviderImageLimits;
  log: Pick<Logger, 'warn' | 'info'>;
  /** Each workspace a filesystem of its own, where the machine allows (workspace-disks.ts). */
  disks?: WorkspaceDisks;
}

/** Where shared files go inside a workspace. */
export const sharedFilesDirectory = 'files';

/** Saves shared files into session workspaces; reads files back for answers. */
export class WorkspaceAttachments implements AttachmentSaver {
  private readonly fetchers = new Map<Platform, AttachmentFetcher>();
  private readonly fitter: SharpImageFitter;

  constructor(readonly options: WorkspaceAttachmentsOptions) {
    this.fitter = new SharpImageFitter(options.imageLimits);
  }

  /** R22: `bytes` checked and made to fit the provider's limits (images tools return go through here too). */
  fitImage(bytes: Buffer, signal: AbortSignal): Promise<FittedImage> {
    return this.fitter.fit(bytes, signal);
  }

  /** How files of `platform` are downloaded (each chat adapter registers its own). */
  register(platform: Platform, fetcher: AttachmentFetcher): void {
    this.fetchers.set(platform, fetcher);
  }

  async save(session: SessionRecord, attachments: readonly Attachment[], signal: AbortSignal): Promise<SavedAttachment[]> {
    const saved: SavedAttachment[] = [];
    for (const attachment of attachments) saved.push(await this.saveOne(session, attachment, signal));
    return saved;
  }

  /** A workspace file that may be sent with an answer: its name and size; a ToolError says why not. */
  async checkForUpload(sessionId: string, shownPath: string): Promise<{ name: string; size: number }> {
    const { name, size, handle } = await this.openForUpload(sessionId, shownPath);
    await handle.close();
    return { name, size };
  }

  /** A workspace file to send with an answer: its name and bytes, read from what was checked. */
  async readForUpload(sessionId: string, shownPath: string): Promise<{ name: string; bytes: Buffer }> {
    const { name, handle } = await this.openForUpload(sessionId, shownPath);
    try {
      return { name, bytes: await readAtMost(handle, this.options.maxFileBytes, shownPath) };
    } finally {
      await handle.close();
    }
  }

  private async openForUpload(sessionId: string, shownPath: string): Promise<{ name: string; size: number; handle: FileHandle }> {
    const workspace = await ensureSessionWorkspace(this.options.root, sessionId, this.options.disks);
    const { handle, size } = await openInWorkspace(workspace, shownPath);
    if (size > this.options.maxFileBytes) {
      await handle.close();
      throw new ToolError(`${shownPath} is ${formatSize(size)}, over the ${formatSize(this.options.maxFileBytes)} limit for files sent to the thread (FILE_MAX_MB)`);
    }
    return { name: safeFileName(path.basename(shownPath)), size, handle };
  }

  /** The workspace directory of a session (not created). */
  workspaceOf(sessionId: string): string {
    return sessionWorkspacePath(this.options.root, sessionId);
  }

  private async saveOne(session: SessionRecord, attachment: Attachment, signal: AbortSignal): Promise<SavedAttachment> {
    const name = safeFileName(attachment.name);
    const described = { name, mimeType: attachment.mimeType, size: attachment.size, imageUrl: null };
    const { maxFileBytes } = this.options;
    if (attachment.size > maxFileBytes) return { ...described, savedAs: null, note: `larger than the ${formatSize(maxFileBytes)} limit for shared files (FILE_MAX_MB)` };
    const fetcher = this.fetchers.get(session.platform);
    if (!fetcher) return { ...described, savedAs: null, note: 'files cannot be fetched from this platform' };
    let fetched: FetchedFile;
    try {
      fetched = await fetcher(attachment, { signal, maxBytes: maxFileBytes, workspaceId: session.workspaceId });
    } catch (error) {
      if (signal.aborted) throw error;
      this.options.log.warn({ sessionId: session.id, ref: attachment.ref, err: error instanceof Error ? error.message : String(error) }, 'attachment-download-failed');
      return { ...described, savedAs: null, note: error instanceof AttachmentTooLarge ? error.message : 'the download failed (the service log says why)' };
    }
    const { bytes } = fetched;
    const result = { ...described, name: fetched.name ? safeFileName(fetched.name) : name, mimeType: fetched.mimeType ?? attachment.mimeType, size: bytes.length };
    try {
      const savedAs = await this.write(session.id, result.name, bytes);
      return { ...result, savedAs, ...(await this.image(bytes, signal)) };
    } catch (error) {
      // Quota refusals are ours and name no server path; anything else is logged, not shown.
      if (error instanceof ToolError) return { ...result, savedAs: null, note: error.message };
      this.options.log.warn({ sessionId: session.id, err: error instanceof Error ? error.message : String(error) }, 'attachment-save-failed');
      return { ...result, savedAs: null, note: 'it could not be written (the service log says why)' };
    }
  }

  /**
   * Writes `bytes` as files/<name>; a different file of that name already there makes it
   * files/<stem>-2<ext> (and so on), while the same bytes again (a message taken twice) reuse it.
   */
  private async write(sessionId: string, name: string, bytes: Buffer): Promise<string> {
    const workspace = await ensureSessionWorkspace(this.options.root, sessionId, this.options.disks);
    const extension = path.extname(name);
    const stem = name.slice(0, name.length - extension.length) || 'file';
    const digest = createHash('sha256').update(bytes).digest('hex');
    for (let copy = 1; copy <= 50; copy += 1) {
      const shownPath = `${sharedFilesDirectory}/${copy === 1 ? name : `${stem}-${copy}${extension}`}`;
      const target = await resolveInWorkspace(workspace, shownPath);
      const existing = await lstat(target).catch(() => null);
      if (existing) {
        if (existing.isFile() && existing.size === bytes.length && createHash('sha256').update(await readFile(target)).digest('hex') === digest) return shownPath;
        continue;
      }
      await checkWrite(workspace, this.options.limits, { shownPath, newBytes: bytes.length, oldBytes: 0, newEntries: 1 + (await missingParents(workspace, target)) });
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, bytes, { flag: 'wx' }).catch(async (error: unknown) => {
        if (!isErrorCode(error, 'ENOSPC')) throw error;
        // The workspace's disk is full (workspace-disks.ts): no half-written file stays.
        await rm(target, { force: true });
        throw new ToolError(`${workspaceFullMessage(this.options.limits.maxBytes)}: delete files in the workspace first`);
      });
      return shownPath;
    }
    throw new ToolError(`too many files named ${name} in ${sharedFilesDirectory}/`);
  }

  /**
   * An image part for the model, or why the image is only described (R22): the bytes must decode
   * as the type they claim, and a copy is shrunk to fit the provider's limits when they do not.
   */
  private async image(bytes: Buffer, signal: AbortSignal): Promise<{ imageUrl: string | null; note: string | null }> {
    if (!claimedImageType(bytes)) return { imageUrl: null, note: null };
    if (!this.options.images) return { imageUrl: null, note: 'this model cannot see images' };
    const fitted = await this.fitImage(bytes, signal);
    if (!fitted.shown) return { imageUrl: null, note: fitted.reason };
    const url = `data:${fitted.mimeType};base64,${fitted.bytes.toString('base64')}`;
    // The note of a shown image goes before "shown below" (attachmentLine).
    return { imageUrl: url, note: fittedNote(fitted) };
  }
}

/** A download refused for its size (the note says so). */
export class AttachmentTooLarge extends Error {}

/** Reads a response body up to `maxBytes`; rejects (AttachmentTooLarge) beyond. */
export async function readCapped(response: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) throw new AttachmentTooLarge(`larger than the ${formatSize(maxBytes)} limit for shared files (FILE_MAX_MB)`);
  const chunks: Buffer[] = [];
  let total = 0;
  if (!response.body) return Buffer.alloc(0);
  for await (const chunk of response.body) {
    const part = Buffer.from(chunk as Uint8Array);
    total += part.length;
    if (total > maxBytes) throw new AttachmentTooLarge(`larger than the ${formatSize(maxBytes)} limit for shared files (FILE_MAX_MB)`);
    chunks.push(part);
  }
  return Buffer.concat(chunks);
}
