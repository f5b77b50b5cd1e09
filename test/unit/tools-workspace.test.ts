import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/core/errors.js';
import type { AnyTool, ToolContext } from '../../src/core/tool.js';
import { workspaceTools } from '../../src/tools/workspace.js';
import { resolveInWorkspace, sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import { toolContext } from '../support/tool-context.js';

const context = toolContext;

let root: string;
let outside: string;
let workspace: string;
let tools: Map<string, AnyTool>;

/** Validates the arguments like the executor does, then runs the tool. */
async function run(name: string, args: unknown, overrides: Partial<ToolContext> = {}): Promise<string> {
  const tool = tools.get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool.execute(tool.input.parse(args), context(overrides));
}

beforeEach(async () => {
  const base = await mkdtemp(path.join(tmpdir(), 'hippo-workspace-'));
  root = path.join(base, 'workspaces');
  outside = path.join(base, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(path.join(outside, 'secret.txt'), 'top secret\n');
  workspace = sessionWorkspacePath(root, 's1');
  tools = new Map(workspaceTools({ root }).map((tool) => [tool.name, tool]));
});

afterEach(async () => {
  await rm(path.dirname(root), { recursive: true, force: true });
});

describe('workspace tools', () => {
  it('offers read_file, list_files, write_file, replace_text and insert_text', () => {
    expect([...tools.keys()]).toEqual(['read_file', 'list_files', 'write_file', 'replace_text', 'insert_text']);
  });

  it('writes a file in the session directory, creating parent directories', async () => {
    const result = await run('write_file', { path: 'notes/plan.md', content: 'one\ntwo\n' });
    expect(result).toBe('Created notes/plan.md (8 bytes, 2 lines)');
    expect(await readFile(path.join(root, 's1', 'notes', 'plan.md'), 'utf8')).toBe('one\ntwo\n');
    expect(await run('write_file', { path: 'notes/plan.md', content: 'three' })).toMatch(/^Overwrote/);
  });

  it('keeps sessions apart', async () => {
    await run('write_file', { path: 'a.txt', content: 'session one' });
    await expect(run('read_file', { path: 'a.txt' }, { sessionId: 's2' })).rejects.toThrow('a.txt does not exist');
  });

  it('reads a file with right-aligned line numbers like nl -ba', async () => {
    await run('write_file', { path: 'a.txt', content: 'alpha\nbeta\ngamma\n' });
    expect(await run('read_file', { path: 'a.txt' })).toBe('     1\talpha\n     2\tbeta\n     3\tgamma');
    expect(await run('read_file', { path: 'a.txt', start_line: 2, end_line: 2 })).toBe('     2\tbeta');
  });

  it('caps read_file at whole lines relative to the context window and says how to continue', async () => {
    const lines = Array.from({ length: 2000 }, (_, index) => `line ${index + 1} ${'x'.repeat(40)}`);
    await run('write_file', { path: 'big.txt', content: `${lines.join('\n')}\n` });
    // 10,000 tokens → 10% × 4 chars = 4,000 characters of output.
    const result = await run('read_file', { path: 'big.txt' }, { contextWindow: 10_000 });
    expect(result.length).toBeLessThan(4_200);
    const shown = result.split('\n').filter((line) => /^\s+\d+\t/.test(line));
    const last = Number(shown.at(-1)?.trim().split('\t')[0]);
    expect(shown.at(-1)).toBe(`${String(last).padStart(6)}\t${lines[last - 1]}`);
    expect(result).toContain(`showed lines 1–${last} of 2000. Continue with start_line=${last + 1}.`);
    const next = await run('read_file', { path: 'big.txt', start_line: last + 1 }, { contextWindow: 10_000 });
    expect(next.startsWith(`${String(last + 1).padStart(6)}\t`)).toBe(true);
  });

  it('refuses binary and non-UTF-8 files', async () => {
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    await writeFile(path.join(workspace, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    await expect(run('read_file', { path: 'image.png' })).rejects.toThrow(/binary file/);
    await expect(run('read_file', { path: 'latin1.txt' })).rejects.toThrow(/not valid UTF-8/);
  });

  it('lists files, directories with a slash, recursively on request', async () => {
    await run('write_file', { path: 'b.txt', content: 'bb' });
    await run('write_file', { path: 'docs/a.md', content: 'a' });
    expect(await run('list_files', {})).toBe('b.txt (2 bytes)\ndocs/');
    expect(await run('list_files', { recursive: true })).toBe('b.txt (2 bytes)\ndocs/\ndocs/a.md (1 bytes)');
    expect(await run('list_files', { path: 'docs' })).toBe('a.md (1 bytes)');
  });

  it('caps list_files with a note', async () => {
    await mkdir(workspace, { recursive: true });
    await Promise.all(Array.from({ length: 600 }, (_, index) => writeFile(path.join(workspace, `f${String(index).padStart(3, '0')}.txt`), '')));
    const result = await run('list_files', {});
    expect(result.split('\n').filter((line) => line.startsWith('f'))).toHaveLength(500);
    expect(result).toContain('[list cut after 500 entries');
  });

  it('replaces a unique literal match', async () => {
    await run('write_file', { path: 'a.txt', content: 'price: $5 (cheap)\nend\n' });
    expect(await run('replace_text', { path: 'a.txt', old_text: '$5 (cheap)', new_text: '$& 7' })).toBe('Replaced 1 occurrence in a.txt at line 1');
    expect(await readFile(path.join(workspace, 'a.txt'), 'utf8')).toBe('price: $& 7\nend\n');
  });

  it('leaves the file untouched when old_text matches zero or several times', async () => {
    const content = 'same\nother\nsame\n';
    await run('write_file', { path: 'a.txt', content });
    const none = run('replace_text', { path: 'a.txt', old_text: 'missing', new_text: 'x' });
    await expect(none).rejects.toBeInstanceOf(ToolError);
    await expect(none).rejects.toThrow('0 matches');
    await expect(run('replace_text', { path: 'a.txt', old_text: 'same', new_text: 'x' })).rejects.toThrow('occurs 2 times in a.txt (lines 1, 3)');
    expect(await readFile(path.join(workspace, 'a.txt'), 'utf8')).toBe(content);
  });

  it('inserts text before or after a unique anchor', async () => {
    await run('write_file', { path: 'a.txt', content: 'start\nend\n' });
    await run('insert_text', { path: 'a.txt', anchor: 'end\n', text: 'middle\n', position: 'before' });
    await run('insert_text', { path: 'a.txt', anchor: 'end\n', text: 'after\n', position: 'after' });
    expect(await readFile(path.join(workspace, 'a.txt'), 'utf8')).toBe('start\nmiddle\nend\nafter\n');
    await expect(run('insert_text', { path: 'a.txt', anchor: 'nowhere', text: 'x', position: 'after' })).rejects.toThrow('0 matches');
  });

  it('refuses paths that leave the workspace: ../x, absolute paths and outward symlinks', async () => {
    await expect(run('read_file', { path: '../x' })).rejects.toThrow('leaves the session workspace');
    await expect(run('write_file', { path: 'a/../../x', content: 'x' })).rejects.toThrow('leaves the session workspace');
    await expect(run('read_file', { path: '/etc/passwd' })).rejects.toThrow('is absolute');
    await mkdir(workspace, { recursive: true });
    await symlink(outside, path.join(workspace, 'link'));
    await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'secret-link.txt'));
    await expect(run('read_file', { path: 'link/secret.txt' })).rejects.toThrow('symbolic link that leads outside');
    await expect(run('read_file', { path: 'secret-link.txt' })).rejects.toThrow('symbolic link that leads outside');
    await expect(run('write_file', { path: 'link/new/file.txt', content: 'x' })).rejects.toThrow('symbolic link that leads outside');
    await expect(run('list_files', { path: 'link' })).rejects.toThrow('symbolic link that leads outside');
    await expect(run('replace_text', { path: 'secret-link.txt', old_text: 'top', new_text: 'no' })).rejects.toBeInstanceOf(ToolError);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret\n');
  });

  it('refuses writing through a dangling symlink', async () => {
    await mkdir(workspace, { recursive: true });
    await symlink(path.join(outside, 'created-by-model.txt'), path.join(workspace, 'dangling'));
    await expect(run('write_file', { path: 'dangling', content: 'x' })).rejects.toThrow('symbolic link whose target does not exist');
  });

  it('follows symlinks that stay inside the workspace', async () => {
    await run('write_file', { path: 'real/a.txt', content: 'inside' });
    await symlink(path.join(workspace, 'real'), path.join(workspace, 'alias'));
    expect(await run('read_file', { path: 'alias/a.txt' })).toBe('     1\tinside');
  });

  it('resolves paths lexically inside the workspace', async () => {
    await mkdir(workspace, { recursive: true });
    expect(await resolveInWorkspace(workspace, 'a/./b/../c.txt')).toBe(path.join(workspace, 'a', 'c.txt'));
  });
});
