// SharpImageFitter (tools/image-fitter.ts, R22): what each provider is shown of an image, decoded
// by sharp within a pixel cap.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { CancelledError } from '../../src/core/errors.js';
import { fittedNote } from '../../src/core/attachment-saver.js';
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { SharpImageFitter } from '../../src/tools/image-fitter.js';
import { flatPng } from '../support/images.js';

const signal = new AbortController().signal;
const openai = new SharpImageFitter(imageLimitsFor('openai', 8));
const anthropic = new SharpImageFitter(imageLimitsFor('anthropic', 8));

async function animatedGif(): Promise<Buffer> {
  const frames = [{ r: 255, g: 0, b: 0 }, { r: 0, g: 0, b: 255 }].map((colour) => ({ create: { width: 16, height: 16, channels: 3 as const, background: colour } }));
  return sharp(frames.map((frame) => ({ create: frame.create })) as never, { join: { animated: true } }).gif().toBuffer();
}

describe('SharpImageFitter', () => {
  it('sends OpenAI the first frame of an animated GIF (it takes only still ones), and Anthropic the GIF', async () => {
    const gif = await animatedGif();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const toOpenAI = await openai.fit(gif, signal);
    expect(toOpenAI).toMatchObject({ shown: true, mimeType: 'image/png', width: 16, height: 16 });
    expect(fittedNote(toOpenAI)).toBe('converted to PNG to be shown');
    if (toOpenAI.shown) expect((await sharp(toOpenAI.bytes).metadata()).pages ?? 1).toBe(1);
    expect(await anthropic.fit(gif, signal)).toMatchObject({ shown: true, mimeType: 'image/gif', bytes: gif, shrunkFrom: null });
  });

  it('decodes nothing whose header claims more pixels than the cap, nor bytes that disagree with their header', async () => {
    const png = await flatPng(10, 10);
    const huge = Buffer.from(png);
    huge.writeUInt32BE(20_000, 16);
    huge.writeUInt32BE(20_000, 20);
    expect(await anthropic.fit(huge, signal)).toEqual({ shown: false, reason: 'too large to show (20000×20000 px; at most 100 MP are read)' });
    const wider = Buffer.from(png);
    wider.writeUInt32BE(11, 16);
    expect(await anthropic.fit(wider, signal)).toEqual({ shown: false, reason: 'its bytes are not a valid PNG image' });
  });

  it('stops when its signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort('shutdown');
    await expect(anthropic.fit(await flatPng(9_000, 10), controller.signal)).rejects.toBeInstanceOf(CancelledError);
  });
});
