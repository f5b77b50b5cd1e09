// What a request shows of a context's images (issue #25 item 1): the latest few distinct images
// within a byte budget; repeats and older ones become text that says where the file is.
import { describe, expect, it } from 'vitest';
import { withoutRepeatedImages } from '../../src/core/loop/attachments.js';
import type { SavedAttachment } from '../../src/core/attachment-saver.js';
import { boundImages, imageUrls } from '../../src/core/loop/image-budget.js';
import type { ChatMessage, ContentPart } from '../../src/core/messages.js';
import { steerMessage } from '../../src/core/prompts/prompts.js';

const url = (index: number, chars = 100) => `data:image/png;base64,${String(index).padStart(4, '0')}${'A'.repeat(chars)}`;
const saved = (index: number, chars = 100): SavedAttachment => ({ name: `shot-${index}.png`, mimeType: 'image/png', size: chars, savedAs: `files/shot-${index}.png`, note: null, imageUrl: url(index, chars) });
const share = (indexes: number[], chars = 100): ChatMessage => steerMessage({ authorName: 'Ada', text: 'look' }, indexes.map((index) => saved(index, chars)));
const parts = (messages: readonly ChatMessage[]): ContentPart[] => messages.flatMap((message) => (typeof message.content === 'string' || !message.content ? [] : message.content));
const shown = (messages: readonly ChatMessage[]) => parts(messages).flatMap((part) => (part.type === 'image_url' ? [part.image_url.url] : []));

describe('images in a request', () => {
  it('are the latest maxImages; older ones are described with where their file is saved', () => {
    const messages = [share([1, 2, 3, 4, 5]), { role: 'assistant' as const, content: 'ok' }, share([6, 7, 8, 9, 10])];
    const bounded = boundImages(messages, { maxImages: 8, maxImageChars: 1_000_000 });
    expect(shown(bounded)).toEqual([3, 4, 5, 6, 7, 8, 9, 10].map((index) => url(index)));
    const texts = parts(bounded).flatMap((part) => (part.type === 'text' ? [part.text] : []));
    expect(texts).toContain('(An earlier image is no longer shown, so requests stay within the image limits. It is saved in the workspace as files/shot-1.png.)');
    expect(texts).toContain('(An earlier image is no longer shown, so requests stay within the image limits. It is saved in the workspace as files/shot-2.png.)');
    // Untouched messages are the same objects; the stored context is not changed.
    expect(bounded[1]).toBe(messages[1]);
    expect(bounded[2]).toBe(messages[2]);
    expect(shown(messages)).toHaveLength(10);
  });

  it('name the right file when a shown image\'s line has a note (a shrunk photo, R22)', () => {
    const shrunk = { ...saved(1), note: 'shrunk from 4000×3000 to 1568×1176 px to be shown' };
    const message = steerMessage({ authorName: 'Ada', text: 'look' }, [shrunk, saved(2)]);
    expect(JSON.stringify(message)).toContain('saved as files/shot-1.png; shrunk from 4000×3000 to 1568×1176 px to be shown; shown below)');
    const bounded = boundImages([message, { role: 'assistant' as const, content: 'ok' }, share([3])], { maxImages: 1, maxImageChars: 1_000_000 });
    const texts = parts(bounded).flatMap((part) => (part.type === 'text' ? [part.text] : []));
    expect(texts).toContain('(An earlier image is no longer shown, so requests stay within the image limits. It is saved in the workspace as files/shot-1.png.)');
    expect(texts).toContain('(An earlier image is no longer shown, so requests stay within the image limits. It is saved in the workspace as files/shot-2.png.)');
  });

  it('fit in maxImageChars, counting from the newest', () => {
    const messages = [share([1, 2], 1_000), share([3, 4], 1_000)];
    const bounded = boundImages(messages, { maxImages: 8, maxImageChars: 3_200 });
    expect(shown(bounded)).toEqual([url(2, 1_000), url(3, 1_000), url(4, 1_000)]);
  });

  it('show identical bytes once, the newest copy', () => {
    const first = share([1]);
    const again = share([1]);
    const bounded = boundImages([first, again], { maxImages: 8, maxImageChars: 1_000_000 });
    expect(shown(bounded)).toEqual([url(1)]);
    expect(parts([bounded[0]!]).at(-1)).toEqual({ type: 'text', text: '(this image again: the same bytes are shown further below)' });
  });
});

describe('images shared again', () => {
  it('add no image part: a file already shown in the context, or earlier in the same take, is only named', () => {
    const context = [share([1])];
    const taken = withoutRepeatedImages(new Map([[10, [saved(1), saved(2), saved(2)]], [11, [saved(2), saved(3)]]]), imageUrls(context));
    expect([...taken.values()].flat().map((file) => file.imageUrl)).toEqual([null, url(2), null, null, url(3)]);
    const message = steerMessage({ authorName: 'Ada', text: 'again' }, taken.get(10)!);
    expect(shown([message])).toEqual([url(2)]);
    expect(parts([message])[0]).toMatchObject({ type: 'text', text: expect.stringContaining('(attached: shot-1.png, image/png, 100 B, saved as files/shot-1.png; the same image as one shown earlier)') });
  });
});
