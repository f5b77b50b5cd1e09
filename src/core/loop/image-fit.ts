// R22 for images tools return (MCP): each is checked and made to fit the provider once, when the
// tool hands it over, before it joins the context; one that cannot be shown is named in text.
import { fittedNote, type FittedImage } from '../attachment-saver.js';
import { fitByHeader } from './attachments.js';
import type { ToolImageShown } from '../prompts/prompts.js';
import type { AgentDeps } from '../agent-context.js';

/** An image a tool handed over, not yet checked. */
export interface ToolImageTaken {
  callId: string;
  tool: string;
  mimeType: string;
  /** Base64 of the bytes, as the tool sent them. */
  data: string;
}

/** Most base64 characters of one image a tool may hand over (24 MiB of bytes); larger ones are not taken. */
export const maxToolImageChars = 32 * 1024 * 1024;

/** What fitting needs of the worker: its deps, its signal, and a way to wait outside its work slot. */
export interface FitScope {
  deps: Pick<AgentDeps, 'attachments' | 'settings'>;
  signal: AbortSignal;
  waiting: <T>(wait: () => Promise<T>) => Promise<T>;
}

/** Each image checked and fitted (ImageFitter when the service wires one, else its header alone). */
export async function fitToolImages(scope: FitScope, images: readonly ToolImageTaken[]): Promise<ToolImageShown[]> {
  const { deps } = scope;
  const shown: ToolImageShown[] = [];
  for (const image of images) {
    const bytes = Buffer.from(image.data, 'base64');
    const saver = deps.attachments;
    const fitted: FittedImage = saver?.fitImage ? await scope.waiting(() => saver.fitImage!(bytes, scope.signal)) : fitByHeader(bytes, deps.settings.imageLimits);
    const base = { callId: image.callId, tool: image.tool, bytes: bytes.length };
    if (!fitted.shown) {
      shown.push({ ...base, mimeType: image.mimeType, url: null, note: fitted.reason });
      continue;
    }
    const note = fittedNote(fitted);
    shown.push({ ...base, mimeType: fitted.mimeType, url: `data:${fitted.mimeType};base64,${fitted.bytes.toString('base64')}`, ...(note ? { note } : {}) });
  }
  return shown;
}
