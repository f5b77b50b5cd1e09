// Workspace quotas, the retention sweep, and error messages without server paths.
import { mkdir, mkdtemp, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AnyTool } from '../../src/core/tool.js';
import { sweepIdleWorkspaces, workspaceTools } from '../../src/tools/workspace.js';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import type { WorkspaceLimits } from '../../src/tools/workspace-quota.js';
import { toolContext } from '../support/tool-context.js';

const MiB = 1024 * 1024;
let base: string;
let root: string;

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'hippo-quota-'));
  root = path.join(base, 'workspaces');
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Runs workspace tool `name` in session s1 with `limits`. */
async function run(name: string, args: unknown, limits?: WorkspaceLimits, sessionId = 's1'): Promise<string> {
  const tool = workspaceTools(limits ? { root, limits } : { root }).find((candidate) => candidate.name === name) as AnyTool;
  return tool.execute(tool.input.parse(args), toolContext({ sessionId }));
}

describe('workspace quotas', () => {
  const limits: WorkspaceLimits = { maxBytes: 1 * MiB, maxFiles: 5, maxFileBytes: 512 * 1024 };

  it('refuses a file over the per-file limit, naming the limit', async () => {
    await expect(run('write_file', { path: 'big.txt', content: 'x'.repeat(600 * 1024) }, limits)).rejects.toThrow(
      /^workspace quota: big\.txt would be 600 KB, over the 512 KB limit per file \(WORKSPACE_MAX_FILE_MB\); write smaller files$/,
    );
  });

  it('refuses a write that would take the workspace over its size limit, naming usage and limit', async () => {
    await run('write_file', { path: 'a.txt', content: 'x'.repeat(400 * 1024) }, limits);
    await run('write_file', { path: 'b.txt', content: 'x'.repeat(400 * 1024) }, limits);
    await expect(run('write_file', { path: 'c.txt', content: 'x'.repeat(400 * 1024) }, limits)).rejects.toThrow(
      'workspace quota: writing c.txt would bring the workspace to 1.2 MB, over its 1 MB limit (WORKSPACE_MAX_MB; 800 KB used now); delete files you no longer need first',
    );
    // Overwriting a file with one of the same size does not grow the workspace.
    expect(await run('write_file', { path: 'a.txt', content: 'y'.repeat(400 * 1024) }, limits)).toMatch(/^Overwrote a\.txt/);
  });

  it('counts growth through replace_text and insert_text too', async () => {
    await run('write_file', { path: 'a.txt', content: `${'x'.repeat(300 * 1024)}\nanchor\n` }, limits);
    await run('write_file', { path: 'b.txt', content: 'x'.repeat(350 * 1024) }, limits);
    await run('write_file', { path: 'c.txt', content: 'x'.repeat(350 * 1024) }, limits);
    await expect(run('insert_text', { path: 'a.txt', anchor: 'anchor', text: 'y'.repeat(300 * 1024), position: 'after' }, limits)).rejects.toThrow(/WORKSPACE_MAX_FILE_MB/);
    await expect(run('replace_text', { path: 'a.txt', old_text: 'anchor', new_text: 'z'.repeat(30 * 1024) }, limits)).rejects.toThrow(/WORKSPACE_MAX_MB/);
  });

  it('refuses new files and directories past the entry limit', async () => {
    for (const name of ['1', '2', '3']) await run('write_file', { path: `${name}.txt`, content: name }, limits);
    await expect(run('write_file', { path: 'deep/er/4.txt', content: '4' }, limits)).rejects.toThrow(
      'workspace quota: the workspace holds 3 files and directories, its limit is 5 (WORKSPACE_MAX_FILES); delete some first',
    );
    expect(await run('write_file', { path: '4.txt', content: '4' }, limits)).toMatch(/^Created/);
  });

  it('applies the defaults: a 64 MiB write is refused', async () => {
    await expect(run('write_file', { path: 'huge.txt', content: 'x'.repeat(64 * MiB) })).rejects.toThrow(/over the 16 MB limit per file/);
  });
});

describe('workspace error messages', () => {
  it('never carry the absolute path of the server', async () => {
    const workspace = sessionWorkspacePath(root, 's1');
    await mkdir(workspace, { recursive: true });
    await symlink('loop-b', path.join(workspace, 'loop-a'));
    await symlink('loop-a', path.join(workspace, 'loop-b'));
    const failures: string[] = [];
    for (const [name, args] of [
      ['read_file', { path: 'loop-a/x.txt' }],
      ['write_file', { path: 'loop-a/x.txt', content: 'x' }],
      ['read_file', { path: `${'n'.repeat(300)}/x.txt` }],
      ['write_file', { path: `${'n'.repeat(300)}.txt`, content: 'x' }],
      ['list_files', { path: 'missing' }],
    ] as const) {
      const message = await run(name, args).then(() => 'no error', (error: unknown) => String(error));
      failures.push(message);
    }
    for (const message of failures) {
      expect(message).not.toBe('no error');
      expect(message).not.toContain(base);
      expect(message).not.toContain(tmpdir());
    }
  });
});

describe('sweepIdleWorkspaces', () => {
  it('removes the workspaces not used for the retention time and keeps the others', async () => {
    await run('write_file', { path: 'old.txt', content: 'old' }, undefined, 'old-session');
    await run('write_file', { path: 'new.txt', content: 'new' }, undefined, 'new-session');
    const day = 24 * 60 * 60 * 1000;
    const oldWorkspace = sessionWorkspacePath(root, 'old-session');
    const longAgo = new Date(Date.now() - 40 * day);
    await utimes(oldWorkspace, longAgo, longAgo);
    await writeFile(path.join(root, 'not-a-workspace.txt'), 'kept');
    expect(await sweepIdleWorkspaces(root, 30 * day)).toBe(1);
    await expect(stat(oldWorkspace)).rejects.toThrow(/ENOENT/);
    expect((await stat(sessionWorkspacePath(root, 'new-session'))).isDirectory()).toBe(true);
    expect(await sweepIdleWorkspaces(path.join(base, 'no-such-root'), day)).toBe(0);
  });

  it('counts a tool call as use: it renews the workspace time stamp', async () => {
    await run('write_file', { path: 'a.txt', content: 'a' }, undefined, 'busy');
    const workspace = sessionWorkspacePath(root, 'busy');
    const longAgo = new Date(Date.now() - 40 * 24 * 60 * 60 * 1000);
    await utimes(workspace, longAgo, longAgo);
    await run('read_file', { path: 'a.txt' }, undefined, 'busy');
    expect(await sweepIdleWorkspaces(root, 30 * 24 * 60 * 60 * 1000)).toBe(0);
  });
});
