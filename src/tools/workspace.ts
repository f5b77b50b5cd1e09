// The `workspace` tool group: read, list, write and edit text files in the session's own
// directory. Every path goes through resolveInWorkspace, so nothing outside it is reachable;
// writes are checked against the workspace quota first (workspace-quota.ts), and error messages
// name workspace-relative paths only, never where the server keeps its files.
import { lstat, mkdir, readFile, readdir, realpath, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import { defineTool, type AnyTool, type Tool, type ToolContext } from '../core/tool.js';
import { resultBudgetChars } from '../core/output-cap.js';
import { ensureSessionWorkspace, resolveInWorkspace, sessionDirectoryName } from './workspace-path.js';
import { isErrorCode } from './error-code.js';
import { checkWrite, DEFAULT_WORKSPACE_LIMITS, missingParents, type WorkspaceLimits } from './workspace-quota.js';
import { workspaceFullMessage, type WorkspaceDisks } from './workspace-disks.js';

/** Options of the workspace tool group. */
export interface WorkspaceToolsOptions {
  /** Directory holding one workspace per session (DATA_DIR/workspaces). */
  root: string;
  /** Size, entry and per-file limits of each workspace (default DEFAULT_WORKSPACE_LIMITS). */
  limits?: WorkspaceLimits;
  /** Each workspace a filesystem of its own, where the machine allows (workspace-disks.ts). */
  disks?: WorkspaceDisks;
}

/** Largest file read_file and the editing tools load, in bytes (16 MiB). */
export const MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024;

/** Most entries list_files shows in one answer. */
export const MAX_LIST_ENTRIES = 500;

const relativePath = z.string().min(1).describe('Path relative to the session workspace, e.g. "notes/plan.md"');

/** Builds read_file, list_files, write_file, replace_text and insert_text for `options.root`. */
export function workspaceTools(options: WorkspaceToolsOptions): AnyTool[] {
  const limits = options.limits ?? DEFAULT_WORKSPACE_LIMITS;
  const locate = async (shownPath: string, context: ToolContext): Promise<string> =>
    resolveInWorkspace(await ensureSessionWorkspace(options.root, context.sessionId, options.disks), shownPath);
  /** Refuses a write that would break the quota; `target` is the absolute path of the file. */
  const checkQuota = async (context: ToolContext, target: string, shownPath: string, newBytes: number): Promise<void> => {
    const workspace = await ensureSessionWorkspace(options.root, context.sessionId, options.disks);
    const existing = await lstat(target).catch(() => undefined);
    const newEntries = existing ? 0 : 1 + (await missingParents(workspace, target));
    await checkWrite(workspace, limits, { shownPath, newBytes, oldBytes: existing?.size ?? 0, newEntries });
  };

  const readFileTool = defineTool({
    name: 'read_file',
    repeatable: true,
    readOnly: true,
    untrustedOutput: true,
    description:
      'Read a text file from the session workspace. Lines are numbered like `nl -ba`. Long files are cut at whole lines; use start_line/end_line (1-based, inclusive) to read further.',
    input: z.object({
      path: relativePath,
      start_line: z.number().int().min(1).optional().describe('First line to show (default 1)'),
      end_line: z.number().int().min(1).optional().describe('Last line to show (default: end of file)'),
    }),
    async execute(input, context) {
      const text = await readTextFile(await locate(input.path, context), input.path);
      return numberLines(text, input.path, input.start_line ?? 1, input.end_line, resultBudgetChars(context.contextWindow));
    },
  });

  const listFilesTool = defineTool({
    name: 'list_files',
    repeatable: true,
    readOnly: true,
    untrustedOutput: true,
    description: 'List files and directories in the session workspace (directories end with "/"). Set recursive to include subdirectories.',
    input: z.object({
      path: z.string().min(1).optional().describe('Directory relative to the workspace (default ".")'),
      recursive: z.boolean().optional().describe('Include the contents of subdirectories (default false)'),
    }),
    async execute(input, context) {
      const shownPath = input.path ?? '.';
      const directory = await locate(shownPath, context);
      const info = await stat(directory).catch((error: unknown) => {
        throw fileError(error, shownPath);
      });
      if (!info.isDirectory()) throw new ToolError(`${shownPath} is a file, not a directory; use read_file to read it`);
      const budget = resultBudgetChars(context.contextWindow);
      const { lines, more } = await listEntries(directory, input.recursive ?? false, MAX_LIST_ENTRIES, budget);
      if (lines.length === 0) return `${shownPath} is empty`;
      const note = more
        ? `\n[list cut after ${lines.length} entries; list a subdirectory${input.recursive ? ' or set recursive to false' : ''} to see the rest]`
        : '';
      return `${lines.join('\n')}${note}`;
    },
  });

  const writeFileTool = defineTool({
    name: 'write_file',
    description: 'Create or overwrite a text file in the session workspace with the given content. Parent directories are created.',
    input: z.object({ path: relativePath, content: z.string().describe('The complete new file content') }),
    async execute(input, context) {
      const target = await locate(input.path, context);
      const existed = await lstat(target).then((info) => {
        if (info.isDirectory()) throw new ToolError(`${input.path} is a directory`);
        return true;
      }, () => false);
      await checkQuota(context, target, input.path, Buffer.byteLength(input.content, 'utf8'));
      await mkdir(path.dirname(target), { recursive: true }).catch((error: unknown) => {
        throw fileError(error, path.dirname(input.path), limits);
      });
      await writeFile(target, input.content, 'utf8').catch(async (error: unknown) => {
        // A disk that filled up (workspace-disks.ts) keeps no half-written new file.
        if (!existed && isErrorCode(error, 'ENOSPC')) await rm(target, { force: true });
        throw fileError(error, input.path, limits);
      });
      const bytes = Buffer.byteLength(input.content, 'utf8');
      return `${existed ? 'Overwrote' : 'Created'} ${input.path} (${bytes} bytes, ${countLines(input.content)} lines)`;
    },
  });

  const replaceTextTool = defineTool({
    name: 'replace_text',
    description:
      'Replace one exact, literal occurrence of old_text with new_text in a file. old_text must occur exactly once (include surrounding lines to make it unique); otherwise nothing changes.',
    input: z.object({
      path: relativePath,
      old_text: z.string().min(1).describe('Text to find, copied exactly (whitespace included)'),
      new_text: z.string().describe('Replacement text (may be empty to delete)'),
    }),
    async execute(input, context) {
      const target = await locate(input.path, context);
      const text = await readTextFile(target, input.path);
      const index = uniqueIndex(text, input.old_text, 'old_text', input.path);
      const updated = text.slice(0, index) + input.new_text + text.slice(index + input.old_text.length);
      await checkQuota(context, target, input.path, Buffer.byteLength(updated, 'utf8'));
      await writeFile(target, updated, 'utf8').catch((error: unknown) => {
        throw fileError(error, input.path, limits);
      });
      return `Replaced 1 occurrence in ${input.path} at line ${lineOf(text, index)}`;
    },
  });

  const insertTextTool = defineTool({
    name: 'insert_text',
    description:
      'Insert text immediately before or after an anchor string that occurs exactly once in a file. The text is inserted as given, so include newlines yourself.',
    input: z.object({
      path: relativePath,
      anchor: z.string().min(1).describe('Exact text that occurs once in the file'),
      text: z.string().min(1).describe('Text to insert'),
      position: z.enum(['before', 'after']).describe('Insert before or after the anchor'),
    }),
    async execute(input, context) {
      const target = await locate(input.path, context);
      const text = await readTextFile(target, input.path);
      const index = uniqueIndex(text, input.anchor, 'anchor', input.path);
      const at = input.position === 'before' ? index : index + input.anchor.length;
      const updated = text.slice(0, at) + input.text + text.slice(at);
      await checkQuota(context, target, input.path, Buffer.byteLength(updated, 'utf8'));
      await writeFile(target, updated, 'utf8').catch((error: unknown) => {
        throw fileError(error, input.path, limits);
      });
      return `Inserted ${input.text.length} characters ${input.position} the anchor in ${input.path} (line ${lineOf(text, index)})`;
    },
  });

  return [readFileTool, listFilesTool, writeFileTool, replaceTextTool, insertTextTool].map((tool) => withoutServerPaths(tool as AnyTool, options.root));
}

/**
 * Wraps a tool so its errors never show where the server keeps files: the session's workspace
 * becomes "." and other paths under the root "<workspaces>" (system errors carry absolute paths).
 */
export function withoutServerPaths(tool: AnyTool, root: string): AnyTool {
  const wrapped: Tool<unknown> = {
    ...tool,
    execute: async (input, context) => {
      try {
        return await tool.execute(input, context);
      } catch (error) {
        if (!(error instanceof Error) || error instanceof CancelledError) throw error;
        const roots = [path.resolve(root), await realpath(root).catch(() => path.resolve(root))];
        let message = error.message;
        const session = sessionDirectoryName(context.sessionId);
        for (const base of roots) message = message.split(`${base}/${session}/`).join('').split(`${base}/${session}`).join('.').split(base).join('<workspaces>');
        if (error instanceof ToolError && message === error.message) throw error;
        throw new ToolError(message, { cause: error });
      }
    },
  };
  return wrapped;
}

/**
 * Removes the workspaces not used for `maxIdleMs` (their directory's time stamp, renewed by every
 * file or shell tool call, or their disk image's); returns how many were removed. Missing root:
 * nothing to do. With `disks`, a workspace's disk is unmounted and its image deleted too.
 */
export async function sweepIdleWorkspaces(root: string, maxIdleMs: number, now = Date.now(), disks?: WorkspaceDisks): Promise<number> {
  const entries = await readdir(root, { withFileTypes: true }).catch((error: unknown) => {
    if (isErrorCode(error, 'ENOENT')) return [];
    throw error;
  });
  let removed = 0;
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const directory = path.join(root, entry.name);
    const lastUsed = disks ? await disks.lastUsedMs(directory) : (await lstat(directory).catch(() => undefined))?.mtimeMs;
    if (lastUsed === undefined || now - lastUsed < maxIdleMs) continue;
    // rm does not follow symbolic links inside: it removes the links themselves.
    if (disks) await disks.remove(directory);
    else await rm(directory, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/** Reads a UTF-8 text file, refusing directories, huge files and binary content. */
async function readTextFile(target: string, shownPath: string): Promise<string> {
  const info = await stat(target).catch((error: unknown) => {
    throw fileError(error, shownPath);
  });
  if (info.isDirectory()) throw new ToolError(`${shownPath} is a directory; use list_files to see its contents`);
  if (!info.isFile()) throw new ToolError(`${shownPath} is not a regular file`);
  if (info.size > MAX_TEXT_FILE_BYTES) {
    throw new ToolError(`${shownPath} is ${info.size} bytes, more than the ${MAX_TEXT_FILE_BYTES}-byte limit for text tools`);
  }
  const bytes = await readFile(target);
  // A NUL byte is the usual sign of a binary format; strict decoding catches other encodings.
  if (bytes.includes(0)) throw new ToolError(`${shownPath} looks like a binary file; only UTF-8 text files can be read`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ToolError(`${shownPath} is not valid UTF-8 text; only UTF-8 text files can be read`);
  }
}

/** Formats lines `start..end` like `nl -ba`, stopping at whole lines once `budget` is reached. */
function numberLines(text: string, shownPath: string, start: number, end: number | undefined, budget: number): string {
  if (text === '') return `${shownPath} is empty`;
  const lines = text.split('\n');
  // A trailing newline ends the last line; it does not start another one.
  if (lines.at(-1) === '') lines.pop();
  const total = lines.length;
  if (start > total) throw new ToolError(`start_line ${start} is past the end of ${shownPath} (${total} lines)`);
  const last = Math.min(end ?? total, total);
  if (last < start) throw new ToolError(`end_line ${last} is before start_line ${start}`);
  const width = Math.max(6, String(last).length);
  let output = '';
  let shownUntil = start - 1;
  for (let number = start; number <= last; number += 1) {
    const line = `${String(number).padStart(width)}\t${lines[number - 1] ?? ''}\n`;
    if (output.length + line.length > budget) {
      if (shownUntil < start) {
        // A single line longer than the budget (minified code, data) is shown in part.
        return `${line.slice(0, budget)}\n[line ${number} is ${line.length} characters long; showing the first ${budget}. The rest of this line cannot be shown with read_file.${number < last ? ` Continue with start_line=${number + 1}.` : ''}]`;
      }
      break;
    }
    output += line;
    shownUntil = number;
  }
  if (shownUntil < last) {
    output += `[output capped at ${budget} characters: showed lines ${start}–${shownUntil} of ${total}. Continue with start_line=${shownUntil + 1}.]`;
  }
  return output.trimEnd();
}

/** Lists a directory (optionally recursively), sorted, directories marked with "/". */
async function listEntries(directory: string, recursive: boolean, limit: number, budget: number): Promise<{ lines: string[]; more: boolean }> {
  const lines: string[] = [];
  let size = 0;
  const visit = async (relativeDirectory: string): Promise<boolean> => {
    const entries = await readdir(path.join(directory, relativeDirectory), { withFileTypes: true });
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    for (const entry of entries) {
      const shown = relativeDirectory === '' ? entry.name : `${relativeDirectory}/${entry.name}`;
      let line: string;
      if (entry.isDirectory()) line = `${shown}/`;
      else if (entry.isSymbolicLink()) line = `${shown} (symbolic link)`;
      else {
        const info = await stat(path.join(directory, shown)).catch(() => undefined);
        line = info ? `${shown} (${info.size} bytes)` : shown;
      }
      if (lines.length >= limit || size + line.length + 1 > budget) return false;
      lines.push(line);
      size += line.length + 1;
      // Symbolic links are listed, never descended into: they may lead outside the workspace.
      if (recursive && entry.isDirectory() && !(await visit(shown))) return false;
    }
    return true;
  };
  const complete = await visit('');
  return { lines, more: !complete };
}

/** Index of the only occurrence of `needle`; throws a ToolError naming the count otherwise. */
function uniqueIndex(text: string, needle: string, label: string, shownPath: string): number {
  const positions: number[] = [];
  // Overlapping occurrences count too: any second match makes the edit ambiguous.
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + 1)) positions.push(index);
  const [first] = positions;
  if (first === undefined) {
    throw new ToolError(`${label} was not found in ${shownPath} (0 matches); the file is unchanged. Read the file and copy the text exactly, including whitespace.`);
  }
  if (positions.length > 1) {
    const lines = [...new Set(positions.map((index) => lineOf(text, index)))].slice(0, 10).join(', ');
    throw new ToolError(`${label} occurs ${positions.length} times in ${shownPath} (lines ${lines}); the file is unchanged. Include more surrounding text so it matches exactly once.`);
  }
  return first;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let position = text.indexOf('\n'); position !== -1 && position < index; position = text.indexOf('\n', position + 1)) line += 1;
  return line;
}

function countLines(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Turns a file-system error into a ToolError the model can act on. */
function fileError(error: unknown, shownPath: string, limits?: WorkspaceLimits): Error {
  if (error instanceof ToolError) return error;
  if (isErrorCode(error, 'ENOSPC') && limits) return new ToolError(`${workspaceFullMessage(limits.maxBytes)}: ${shownPath} could not be written whole; delete files you no longer need first`);
  if (isErrorCode(error, 'ENOENT')) return new ToolError(`${shownPath} does not exist`);
  if (isErrorCode(error, 'ENOTDIR')) return new ToolError(`a parent of ${shownPath} is a file, not a directory`);
  if (isErrorCode(error, 'EISDIR')) return new ToolError(`${shownPath} is a directory`);
  if (isErrorCode(error, 'EACCES') || isErrorCode(error, 'EPERM')) return new ToolError(`permission denied for ${shownPath}`);
  return new ToolError(`cannot access ${shownPath}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
