// R22: a part the provider refuses on its own terms never wedges a session. The image parts it
// named (or, when it named none, every image the refused request showed) become a short text note
// in the stored context, so no later call, fork, restart or reset's carry-over sends them again,
// and the call is made once more. A second refusal of that call fails it as any model error does.
import { ImageRefusedError } from '../errors.js';
import type { ChatMessage, ContentPart } from '../messages.js';
import { imageUrls, savedPaths, shownSavedAs } from './image-budget.js';
import type { LiveContext } from './live-context.js';
import type { Log } from '../log.js';

/** What the retry needs: the live context, the request as it was shown, and a log. */
export interface RefusalScope {
  context: LiveContext;
  /** The messages the refused request showed (after the per-request image bounds). */
  shown: () => readonly ChatMessage[];
  log: Pick<Log, 'warn'>;
  sessionId: string;
}

/** Runs `call`; after an image refusal, drops the refused images for good and runs it once more. */
export async function retryWithoutRefusedImages<T>(scope: RefusalScope, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof ImageRefusedError)) throw error;
    const refused = error.imageUrls.length > 0 ? new Set(error.imageUrls) : imageUrls(scope.shown());
    const replaced = await dropImages(scope.context, refused, refusalReason(error.message));
    scope.log.warn({ sessionId: scope.sessionId, named: error.imageUrls.length, replaced, err: error.message }, 'image-refused');
    // Nothing of ours matched: the same request would be refused again.
    if (replaced === 0) throw error;
    return call();
  }
}

/** Replaces every image part whose data URL is in `refused` with a note; returns how many parts. */
async function dropImages(context: LiveContext, refused: ReadonlySet<string>, reason: string): Promise<number> {
  const changes: Array<{ seq: number; message: ChatMessage }> = [];
  let replaced = 0;
  for (const entry of context.entries) {
    const content = entry.message.content;
    if (typeof content === 'string' || !content?.some((part) => part.type === 'image_url' && refused.has(part.image_url.url))) continue;
    const paths = savedPaths(content);
    const dropped = new Set<number>();
    let imageIndex = -1;
    const parts = content.map((part): ContentPart => {
      if (part.type !== 'image_url') return part;
      imageIndex += 1;
      if (!refused.has(part.image_url.url)) return part;
      replaced += 1;
      dropped.add(imageIndex);
      return { type: 'text', text: refusedImageText(paths[imageIndex], reason) };
    });
    changes.push({ seq: entry.seq, message: { ...entry.message, content: withoutShownLines(parts, dropped) } });
  }
  if (changes.length > 0) await context.rewrite(changes);
  return replaced;
}

/**
 * The attachment lines of dropped images no longer say "shown below", so the lines and the image
 * parts still pair up in order (image-budget.ts names an omitted image by its line).
 */
function withoutShownLines(parts: ContentPart[], dropped: ReadonlySet<number>): ContentPart[] {
  let line = -1;
  return parts.map((part) => {
    if (part.type !== 'text') return part;
    const text = part.text.replace(new RegExp(shownSavedAs.source, 'gm'), (whole) => {
      line += 1;
      return dropped.has(line) ? whole.replace(/; shown below\)$/, '; refused by the model provider)') : whole;
    });
    return text === part.text ? part : { ...part, text };
  });
}

/** The note that stands for a refused image from now on. */
export function refusedImageText(savedAs: string | undefined, reason: string): string {
  const where = savedAs ? ` It is saved in the workspace as ${savedAs}.` : '';
  return `(An image the model provider refused (${reason}); it is no longer shown.${where})`;
}

/** The provider's words, without the endpoint, in one short line. */
function refusalReason(message: string): string {
  const words = message.replace(/^.*? answered /, '').replace(/\s+/g, ' ').trim();
  return words.length > 200 ? `${words.slice(0, 200)}…` : words;
}
