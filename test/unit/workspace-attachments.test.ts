// WorkspaceAttachments (tools/workspace-attachments.ts): shared files saved under files/ within the
// workspace limits; images shown only when the model accepts them, decode, and fit the provider (R22).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discordFileFetcher } from '../../src/adapters/discord/files.js';
import type { Attachment } from '../../src/core/store.js';
import type { SessionRecord } from '../../src/core/store.js';
import { ToolError } from '../../src/core/errors.js';
import { ensureSessionWorkspace } from '../../src/tools/workspace-path.js';
import { createLogger } from '../../src/log.js';
import { WorkspaceAttachments, type WorkspaceAttachmentsOptions } from '../../src/tools/workspace-attachments.js';
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { dataUrlImage, fakePng, flatPng, noiseJpeg } from '../support/images.js';

const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const session = (id: string): SessionRecord => ({
  id, platform: 'console', workspaceId: 'local', channelId: 'c', threadKey: 't', memorySpaceId: 'm', title: 't',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null, workerSteps: 0, runStartStep: 0,
});
const file = (name: string, size: number): Attachment => ({ name, mimeType: null, size, ref: name });
const signal = new AbortController().signal;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'hippo-attachments-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function saver(options: Partial<WorkspaceAttachmentsOptions> = {}, contents: Record<string, Buffer> = {}): WorkspaceAttachments {
  const attachments = new WorkspaceAttachments({
    root, limits: { maxBytes: 1_000_000, maxFiles: 100, maxFileBytes: 1_000_000 }, maxFileBytes: 8 * 1024 * 1024, images: true, imageLimits: imageLimitsFor('anthropic', 8), log: createLogger('silent'), ...options,
  });
  attachments.register('console', async (attachment) => {
    const bytes = contents[attachment.ref];
    if (!bytes) throw new Error('gone');
    return { bytes };
  });
  return attachments;
}

describe('WorkspaceAttachments', () => {
  it('keeps the same file once, and a different file of the same name beside it', async () => {
    const attachments = saver({}, { a: Buffer.from('one'), b: Buffer.from('two') });
    const first = await attachments.save(session('s-names'), [{ ...file('a.txt', 3), ref: 'a' }], signal);
    const again = await attachments.save(session('s-names'), [{ ...file('a.txt', 3), ref: 'a' }], signal);
    const other = await attachments.save(session('s-names'), [{ ...file('a.txt', 3), ref: 'b' }], signal);
    expect([first[0]?.savedAs, again[0]?.savedAs, other[0]?.savedAs]).toEqual(['files/a.txt', 'files/a.txt', 'files/a-2.txt']);
    expect(await readFile(path.join(attachments.workspaceOf('s-names'), 'files', 'a-2.txt'), 'utf8')).toBe('two');
  });

  it('shows an image that fits as it is, and a 4 MiB phone photo shrunk to fit the provider (R22)', async () => {
    const photo = await noiseJpeg();
    expect(photo.length).toBeGreaterThan(4 * 1024 * 1024);
    const attachments = saver({ limits: { maxBytes: 20_000_000, maxFiles: 100, maxFileBytes: 10_000_000 } }, { small: png, photo });
    const [small, large] = await attachments.save(session('s-images'), [{ ...file('s.png', png.length), ref: 'small' }, { ...file('photo.jpg', photo.length), ref: 'photo' }], signal);
    expect(small).toMatchObject({ imageUrl: `data:image/png;base64,${png.toString('base64')}`, note: null });
    expect(large).toMatchObject({ savedAs: 'files/photo.jpg', note: 'shrunk from 4000×3000 to 1568×1176 px to be shown' });
    // The person's file is kept whole; the model is shown the smaller copy.
    expect((await readFile(path.join(attachments.workspaceOf('s-images'), 'files', 'photo.jpg'))).equals(photo)).toBe(true);
    const shown = await dataUrlImage(large?.imageUrl ?? '');
    expect(shown).toMatchObject({ type: 'image/jpeg', width: 1568, height: 1176 });
    expect(shown.base64Chars).toBeLessThanOrEqual(5 * 1024 * 1024);
  });

  it('shrinks an image too tall for the provider, and never shows bytes that are not the image they claim', async () => {
    const tall = await flatPng(200, 9_000);
    const cut = (await noiseJpeg(600, 400)).subarray(0, 20_000);
    const attachments = saver({}, { tall, fake: fakePng(), cut });
    const [high, fake, broken] = await attachments.save(session('s-bad-images'), [{ ...file('tall.png', tall.length), ref: 'tall' }, { ...file('chart.png', 60), ref: 'fake' }, { ...file('cut.jpg', cut.length), ref: 'cut' }], signal);
    expect(high?.note).toBe('shrunk from 200×9000 to 35×1568 px to be shown');
    expect(await dataUrlImage(high?.imageUrl ?? '')).toMatchObject({ width: 35, height: 1568 });
    expect(fake).toMatchObject({ savedAs: 'files/chart.png', imageUrl: null, note: 'its bytes are not a valid PNG image' });
    expect(broken).toMatchObject({ savedAs: 'files/cut.jpg', imageUrl: null, note: 'its bytes are not a valid JPEG image' });
  });

  it('refuses what would break the workspace quota, and names a failed download without its error', async () => {
    const attachments = saver({ limits: { maxBytes: 10, maxFiles: 100, maxFileBytes: 1_000 } }, { data: Buffer.alloc(50, 1) });
    const [over, gone] = await attachments.save(session('s-quota'), [{ ...file('data.bin', 50), ref: 'data' }, { ...file('gone.bin', 5), ref: 'missing' }], signal);
    expect(over).toMatchObject({ savedAs: null });
    expect(over?.note).toMatch(/^workspace quota: writing files\/data\.bin would bring the workspace to/);
    expect(gone).toMatchObject({ savedAs: null, note: 'the download failed (the service log says why)' });
  });

  it('fetches Discord attachments from Discord\'s file hosts (or the configured API) only', async () => {
    const fetcher = discordFileFetcher(undefined);
    await expect(fetcher({ name: 'x', mimeType: null, size: 1, ref: '1', url: 'http://127.0.0.1:9/attachments/x' }, { signal, maxBytes: 10, workspaceId: 'G1' })).rejects.toThrow(/refusing to fetch an attachment from http:\/\/127\.0\.0\.1:9/);
    await expect(discordFileFetcher('http://127.0.0.1:9/api')({ name: 'x', mimeType: null, size: 1, ref: '1', url: 'http://127.0.0.1:9/attachments/x' }, { signal, maxBytes: 10, workspaceId: 'G1' })).rejects.toThrow(/fetch failed/);
  });
});

describe('a file sent with an answer', () => {
  // As a shell command would: a file and a symlink take turns at the path, or at its directory.
  const flips = {
    'the file, with a symlink to /proc/self/environ': 'cd files; while :; do ln -sfn /proc/self/environ report.txt; echo safe > next.txt; mv -f next.txt report.txt; done',
    'its directory, with a symlink to a directory outside': 'while :; do mv files files.real; ln -s "$OUTSIDE" files; rm files; mv files.real files; done',
  };
  for (const [what, script] of Object.entries(flips)) {
    it(`is read from what was checked: ${what} flipped in during uploads yields no byte from outside`, async () => {
      const secret = `flip-secret-${process.pid}`;
      process.env['HIPPO_FLIP_TEST_SECRET'] = secret;
      const outside = await mkdtemp(path.join(tmpdir(), 'hippo-outside-'));
      await writeFile(path.join(outside, 'report.txt'), `${secret}\n`);
      const attachments = saver();
      const sessionId = `s-flip-${Object.keys(flips).indexOf(what)}`;
      const workspace = await ensureSessionWorkspace(root, sessionId);
      await mkdir(path.join(workspace, 'files'), { recursive: true });
      await writeFile(path.join(workspace, 'files', 'report.txt'), 'safe\n');
      const flipper = spawn('sh', ['-c', script], { cwd: workspace, stdio: 'ignore', env: { ...process.env, OUTSIDE: outside } });
      let read = 0;
      let refused = 0;
      let leaked = 0;
      let other = 0;
      try {
        for (let attempt = 0; attempt < 100_000 && (read < 200 || refused < 200); attempt += 1) {
          const bytes = await attachments.readForUpload(sessionId, 'files/report.txt').then((file) => file.bytes, (error: unknown) => error);
          if (!Buffer.isBuffer(bytes)) {
            if (bytes instanceof ToolError) refused += 1;
            else other += 1;
          } else if (bytes.toString('latin1').includes(secret)) leaked += 1;
          else if (bytes.toString('utf8') === 'safe\n') read += 1;
          else other += 1;
        }
      } finally {
        flipper.kill('SIGKILL');
        delete process.env['HIPPO_FLIP_TEST_SECRET'];
      }
      expect({ leaked, other }).toEqual({ leaked: 0, other: 0 });
      expect(read).toBeGreaterThanOrEqual(200);
      expect(refused).toBeGreaterThanOrEqual(200);
    }, 120_000);
  }

  it('is refused when a symlink or a directory leading outside stands in its place', async () => {
    const attachments = saver();
    const workspace = await ensureSessionWorkspace(root, 's-links');
    await mkdir(path.join(workspace, 'files'), { recursive: true });
    await symlink('/proc/self/environ', path.join(workspace, 'files', 'env.txt'));
    await symlink('/etc', path.join(workspace, 'etc'));
    await expect(attachments.readForUpload('s-links', 'files/env.txt')).rejects.toThrow(ToolError);
    await expect(attachments.readForUpload('s-links', 'etc/hostname')).rejects.toThrow(/leads outside the session workspace/);
    await expect(attachments.checkForUpload('s-links', 'files')).rejects.toThrow('files is not a file in the workspace');
  });
});
