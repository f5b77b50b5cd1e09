// The fakes refuse the images the real APIs refuse, in their words (test/fakes/fake-image-checks.ts,
// R22): Anthropic's size, pixel, media-type and decode checks, and OpenAI's unsupported image.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { anthropicImageRefusal, anthropicMaxBase64, openAIImageRefusal } from '../fakes/fake-image-checks.js';
import type { AnthropicRequestBody } from '../fakes/fake-anthropic-prompt.js';
import { fakePng, flatPng } from '../support/images.js';

const block = (bytes: Buffer | string, mediaType = 'image/png') => ({ type: 'image', source: { type: 'base64', media_type: mediaType, data: typeof bytes === 'string' ? bytes : bytes.toString('base64') } });
const body = (...images: Array<ReturnType<typeof block>>): AnthropicRequestBody => ({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...images] }] });

describe('the fake Messages API', () => {
  it('refuses an image as the API does, naming its block', async () => {
    const small = await flatPng(10, 10);
    expect(await anthropicImageRefusal(body(block(small)))).toBeNull();
    expect(await anthropicImageRefusal(body(block('A'.repeat(anthropicMaxBase64 + 4))))).toBe(`messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: ${anthropicMaxBase64 + 4} bytes > 5242880 bytes`);
    expect(await anthropicImageRefusal(body(block(fakePng())))).toMatch(/^messages\.0\.content\.1\.image\.source\.base64\.data: The image data you provided does not represent a valid image\./);
    expect(await anthropicImageRefusal(body(block(small, 'image/jpeg')))).toBe('messages.0.content.1.image.source.base64.data: Image does not match the provided media type image/jpeg');
    expect(await anthropicImageRefusal(body(block(small), block(await flatPng(8_001, 2))))).toBe('messages.0.content.2.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels');
    const many = Array.from({ length: 21 }, () => block(small));
    expect(await anthropicImageRefusal(body(...many, block(await flatPng(2_001, 2))))).toBe('messages.0.content.22.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels');
    expect(await anthropicImageRefusal(body(block(small)), (bytes) => bytes.equals(small))).toBe('messages.0.content.1.image.source.base64: Could not process image');
  });
});

describe('the fake Chat Completions API', () => {
  it('refuses an image that does not decode, or an animated GIF, with OpenAI\'s words', async () => {
    const request = (url: string) => ({ messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url } }] }] });
    expect(await openAIImageRefusal(request(`data:image/png;base64,${(await flatPng(10, 10)).toString('base64')}`))).toBeNull();
    expect(await openAIImageRefusal(request(`data:image/png;base64,${fakePng().toString('base64')}`))).toBe('You uploaded an unsupported image. Please make sure your image is valid.');
    const frames = [{ r: 255, g: 0, b: 0 }, { r: 0, g: 0, b: 255 }].map((background) => ({ create: { width: 8, height: 8, channels: 3 as const, background } }));
    const gif = await sharp(frames as never, { join: { animated: true } }).gif().toBuffer();
    expect(await openAIImageRefusal(request(`data:image/gif;base64,${gif.toString('base64')}`))).toBe('You uploaded an unsupported image. Please make sure your image is valid.');
  });
});
