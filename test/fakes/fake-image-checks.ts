// The image checks the real APIs make before they answer (R22), for the fakes: Anthropic's Messages
// API (fake-anthropic-server.ts) and OpenAI's Chat Completions (fake-model-server.ts), with their
// wording. The bytes are read by sharp (libvips), not by Hippo's own header reader
// (src/core/image-header.ts), so a bug there is caught here as a provider would catch it.
import sharp from 'sharp';
import type { AnthropicRequestBody, WireBlock } from './fake-anthropic-prompt.js';
import type { FakeRequestBody } from './fake-model-server.js';

/** A test's own refusal: images for which it returns true are refused as the API refuses one it cannot process. */
export type ImageRefusalRule = (bytes: Buffer) => boolean;

const anthropicTypes = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
/** Anthropic: base64 of one image, in bytes ("image exceeds 5 MB maximum: N bytes > 5242880 bytes"). */
export const anthropicMaxBase64 = 5_242_880;

/** What sharp makes of some bytes: their type and size, or null when they are no image it reads. */
async function decoded(bytes: Buffer): Promise<{ type: string; width: number; height: number; pages: number } | null> {
  try {
    const metadata = await sharp(bytes, { failOn: 'truncated' }).metadata();
    return { type: `image/${metadata.format}`, width: metadata.width, height: metadata.height, pages: metadata.pages ?? 1 };
  } catch {
    return null;
  }
}

/** Every base64 image block of a Messages API body, with the path the API names it by. */
function anthropicImages(body: AnthropicRequestBody): Array<{ path: string; block: WireBlock }> {
  const found: Array<{ path: string; block: WireBlock }> = [];
  for (const [index, message] of (body.messages ?? []).entries()) {
    if (typeof message.content === 'string') continue;
    for (const [position, block] of message.content.entries()) {
      if (block.type === 'image') found.push({ path: `messages.${index}.content.${position}`, block });
      if (block.type === 'tool_result' && Array.isArray(block.content)) {
        for (const [inner, part] of block.content.entries()) if (part.type === 'image') found.push({ path: `messages.${index}.content.${position}.content.${inner}`, block: part });
      }
    }
  }
  return found;
}

/**
 * The 400 message the Messages API answers for the first image it will not take, or null: base64
 * over 5 MB, a media type it does not take, bytes that are no image or not the declared type, a
 * side over 8,000 px (2,000 px when the request has more than 20 images), or `refuse`.
 */
export async function anthropicImageRefusal(body: AnthropicRequestBody, refuse?: ImageRefusalRule): Promise<string | null> {
  const images = anthropicImages(body);
  const maxSide = images.length > 20 ? 2_000 : 8_000;
  for (const { path, block } of images) {
    const source = block.source;
    if (source?.type !== 'base64') continue;
    const data = source.data ?? '';
    if (data.length > anthropicMaxBase64) return `${path}.image.source.base64: image exceeds 5 MB maximum: ${data.length} bytes > ${anthropicMaxBase64} bytes`;
    if (!anthropicTypes.includes(source.media_type ?? '')) return `${path}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
    const bytes = Buffer.from(data, 'base64');
    const image = await decoded(bytes);
    if (!image) return `${path}.image.source.base64.data: The image data you provided does not represent a valid image. Please check your input and try again with one of the supported image formats: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'].`;
    if (image.type !== source.media_type) return `${path}.image.source.base64.data: Image does not match the provided media type ${source.media_type ?? ''}`;
    if (Math.max(image.width, image.height) > maxSide) {
      return `${path}.image.source.base64.data: At least one of the image dimensions exceed max allowed size${images.length > 20 ? ' for many-image requests' : ''}: ${maxSide} pixels`;
    }
    if (refuse?.(bytes)) return `${path}.image.source.base64: Could not process image`;
  }
  return null;
}

const openAITypes = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/**
 * OpenAI's 400 for an image part it will not take, or null: a data URL whose bytes are no PNG,
 * JPEG, WebP or non-animated GIF, or that `refuse` refuses. OpenAI names no part; its code is
 * `invalid_image_format`.
 */
export async function openAIImageRefusal(body: FakeRequestBody, refuse?: ImageRefusalRule): Promise<string | null> {
  for (const message of body.messages) {
    const content = message['content'];
    if (!Array.isArray(content)) continue;
    for (const part of content as Array<{ type?: string; image_url?: { url?: string } }>) {
      if (part.type !== 'image_url') continue;
      const match = /^data:([^;,]+);base64,/.exec(part.image_url?.url ?? '');
      if (!match) continue;
      const bytes = Buffer.from((part.image_url?.url ?? '').slice(match[0].length), 'base64');
      const image = await decoded(bytes);
      const refused = !image || !openAITypes.includes(image.type) || (image.type === 'image/gif' && image.pages > 1) || refuse?.(bytes) === true;
      if (refused) return 'You uploaded an unsupported image. Please make sure your image is valid.';
    }
  }
  return null;
}
