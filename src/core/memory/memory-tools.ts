// Memory tools (R13, R15): one set of definitions for every role (R1); permissions are checked
// here, when a tool runs. The worker reads, searches and writes its own TODO.md; the summarizer
// curates every other document of the memory space.
import { z } from 'zod';
import { SearchLimitError, ToolError } from '../errors.js';
import { mainDocumentPath, todoDocumentPath } from '../memory-store.js';
import type { AgentRole } from '../messages.js';
import type { ContextStore, DocumentAuthor, DocumentKey, DocumentStore } from '../store.js';
import { defineTool, type AnyTool, type ToolContext } from '../tool.js';

const path = z.string().min(1).max(200).regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters').describe('Document path inside the memory space, e.g. "MAIN.md" or "projects/billing.md"');
const expectedVersion = z.number().int().min(0).describe('The version you last read (0 to create a new document); a mismatch means someone changed it');
/**
 * Compare-and-set is mandatory where a write removes text (replace, edit, delete): the tool must
 * not fill in a version it read itself a moment ago, or a person's change made since the
 * summarizer read the document would be overwritten without a conflict (R13).
 */
const readVersion = z
  .number({ error: (issue) => (issue.input === undefined ? 'required: pass the version you read (memory_read shows it); someone may have changed the document since' : undefined) })
  .int().min(0).describe('The version you last read; a mismatch means someone changed it since: read it again');

/** The memory tools, in a stable order. */
export function memoryTools(stores: { documents: DocumentStore; context: ContextStore }): AnyTool[] {
  const { documents } = stores;
  return [
    defineTool({
      name: 'memory_read',
      repeatable: true,
      untrustedOutput: true,
      description: 'Read a memory document (MAIN.md, TODO.md or any other) with its version number.',
      input: z.object({ path }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw }, context) => {
        const document = await documents.read(keyFor(raw, context));
        if (!document || document.deleted) throw new ToolError(`no memory document ${normalize(raw)}; memory_list shows what exists`);
        return `${document.path} (version ${document.version}):\n${document.content}`;
      },
    }),
    defineTool({
      name: 'memory_list',
      repeatable: true,
      description: 'List the memory documents of this space with their versions and sizes.',
      input: z.object({}),
      roles: ['worker', 'summarizer'],
      execute: async (_input, context) => {
        const list = await documents.list(context.memorySpaceId, context.sessionId);
        if (list.length === 0) return 'No memory documents yet.';
        return list.map((document) => `${document.path}  v${document.version}  ${document.content.length} chars`).join('\n');
      },
    }),
    defineTool({
      name: 'memory_search',
      repeatable: true,
      untrustedOutput: true,
      description: 'Full-text search over earlier conversations of this memory space (contexts before the last resets and other threads). Use it when you suspect you have seen something before.',
      input: z.object({ query: z.string().min(1).max(500), limit: z.number().int().min(1).max(50).default(10) }),
      roles: ['worker', 'summarizer'],
      execute: async ({ query, limit }, context) => {
        // The session's model has its own allowance of searches, as a person has (docs/security.md).
        const hits = await stores.context.searchOriginals(context.memorySpaceId, query, context.segmentId, limit, `session:${context.sessionId}`).catch((error: unknown) => {
          throw error instanceof SearchLimitError ? new ToolError(error.message) : error;
        });
        if (hits.length === 0) return `No earlier messages match "${query}".`;
        return hits.map((hit) => `[session ${hit.sessionId.slice(0, 8)} · context ${hit.segmentOrdinal} · #${hit.seq} · ${hit.role}] ${hit.snippet}`).join('\n');
      },
    }),
    defineTool({
      name: 'todo_write',
      repeatable: true,
      description: 'Replace your TODO.md for this thread. Use "- [ ] open item" and "- [x] done item" lines.',
      input: z.object({ content: z.string().max(20_000), expected_version: expectedVersion.optional() }),
      roles: ['worker', 'summarizer'],
      execute: async ({ content, expected_version }, context) => {
        if (context.role !== 'worker') throw new ToolError('TODO.md belongs to the worker; as the summarizer, edit MAIN.md or other documents instead');
        const key = { spaceId: context.memorySpaceId, sessionKey: context.sessionId, path: todoDocumentPath };
        const written = await documents.write(key, content, { kind: 'worker', sessionId: context.sessionId }, expected_version);
        return `TODO.md saved (version ${written.version}).`;
      },
    }),
    defineTool({
      name: 'memory_write',
      description: 'Create or overwrite a memory document (summarizer only).',
      input: z.object({ path, content: z.string().max(100_000), expected_version: expectedVersion }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw, content, expected_version }, context) => {
        const key = writableKey(raw, context);
        const written = await documents.write(key, content, author(context), expected_version);
        return `${written.path} saved (version ${written.version}).`;
      },
    }),
    defineTool({
      name: 'memory_edit',
      description: 'Replace one exact, unique passage of a memory document (summarizer only).',
      input: z.object({ path, old_text: z.string().min(1), new_text: z.string(), expected_version: readVersion }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw, old_text, new_text, expected_version }, context) => {
        const key = writableKey(raw, context);
        const document = await documents.read(key);
        if (!document || document.deleted) throw new ToolError(`no memory document ${key.path}; create it with memory_write`);
        const count = document.content.split(old_text).length - 1;
        if (count !== 1) throw new ToolError(`old_text occurs ${count} times in ${key.path}; it must occur exactly once (nothing changed)`);
        const written = await documents.write(key, document.content.replace(old_text, () => new_text), author(context), expected_version);
        return `${written.path} edited (version ${written.version}).`;
      },
    }),
    defineTool({
      name: 'memory_append',
      description: 'Add lines to a memory document: at its end, or at the end of the section under `heading` (summarizer only). Cheaper than rewriting the document.',
      input: z.object({
        path,
        text: z.string().min(1).max(20_000),
        heading: z.string().min(1).max(200).optional().describe('A Markdown heading of the document, e.g. "## Decisions"; the lines go at the end of its section'),
        expected_version: expectedVersion.optional(),
      }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw, text, heading, expected_version }, context) => {
        const key = writableKey(raw, context);
        const document = await documents.read(key);
        if (!document || document.deleted) throw new ToolError(`no memory document ${key.path}; create it with memory_write`);
        const content = heading === undefined ? appendAtEnd(document.content, text) : appendToSection(document.content, heading, text, key.path);
        const written = await documents.write(key, content, author(context), expected_version ?? document.version);
        return `${written.path} appended (version ${written.version}).`;
      },
    }),
    defineTool({
      name: 'memory_replace_section',
      description: 'Replace the body of one section (the lines under a Markdown heading, up to the next heading of the same or a higher level) of a memory document (summarizer only).',
      input: z.object({ path, heading: z.string().min(1).max(200), new_body: z.string().max(50_000), expected_version: readVersion }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw, heading, new_body, expected_version }, context) => {
        const key = writableKey(raw, context);
        const document = await documents.read(key);
        if (!document || document.deleted) throw new ToolError(`no memory document ${key.path}; create it with memory_write`);
        const section = findSection(document.content, heading, key.path);
        const lines = document.content.split('\n');
        const body = new_body === '' ? [] : new_body.replace(/\n$/, '').split('\n');
        // One blank line before the next heading; the document still ends with a newline.
        const after = lines.slice(section.end);
        const next = after.findIndex((line) => line.trim() !== '');
        const tail = next < 0 ? [''] : ['', ...after.slice(next)];
        const content = [...lines.slice(0, section.start + 1), ...body, ...tail].join('\n');
        const written = await documents.write(key, content, author(context), expected_version);
        return `${written.path} section "${heading}" replaced (version ${written.version}).`;
      },
    }),
    defineTool({
      name: 'memory_move',
      description: 'Rename or move a memory document (summarizer only).',
      input: z.object({ from: path, to: path }),
      roles: ['worker', 'summarizer'],
      execute: async ({ from, to }, context) => {
        const source = writableKey(from, context);
        const target = writableKey(to, context);
        if (source.path === mainDocumentPath) throw new ToolError('MAIN.md cannot be moved: it is loaded into every context');
        if (source.path === target.path) throw new ToolError(`${source.path} is already at that path`);
        const document = await documents.read(source);
        if (!document || document.deleted) throw new ToolError(`no memory document ${source.path}`);
        // One transaction: the document is never in both places or in neither.
        await documents.move(source, target, author(context));
        return `${source.path} moved to ${target.path}.`;
      },
    }),
    defineTool({
      name: 'memory_delete',
      description: 'Delete a memory document (summarizer only; its history is kept and people can revert).',
      input: z.object({ path, expected_version: readVersion }),
      roles: ['worker', 'summarizer'],
      execute: async ({ path: raw, expected_version }, context) => {
        const key = writableKey(raw, context);
        if (key.path === mainDocumentPath) throw new ToolError('MAIN.md cannot be deleted: rewrite it instead');
        await documents.remove(key, author(context), expected_version);
        return `${key.path} deleted.`;
      },
    }),
    defineTool({
      name: memoryDoneTool,
      repeatable: true,
      description: 'Summarizer only: ends your run. Call it last, in the same step as your final memory edits, with one short line saying what you changed (or "no change").',
      input: z.object({ note: z.string().max(300).default('') }),
      roles: ['summarizer'],
      // The summarizer's loop ends after this step (R4); the result is what the transcript shows.
      execute: async () => 'Run finished.',
    }),
  ];
}

/** The tool that ends a summarizer run in the step of its last edits (R4: one read per run). */
export const memoryDoneTool = 'memory_done';

/** `text` added as lines at the end of `content`. */
function appendAtEnd(content: string, text: string): string {
  const base = content === '' || content.endsWith('\n') ? content : `${content}\n`;
  return `${base}${text.endsWith('\n') ? text : `${text}\n`}`;
}

/** The lines of a section: its heading's index, and where the next heading of its level or higher starts. */
function findSection(content: string, heading: string, path: string): { start: number; end: number } {
  const lines = content.split('\n');
  const wanted = heading.trim();
  const title = (text: string) => text.replace(/^#+\s*/, '').trim();
  const matches = lines.flatMap((line, index) => (/^#{1,6}\s/.test(line) && (line.trim() === wanted || title(line) === title(wanted)) ? [index] : []));
  if (matches.length !== 1) {
    throw new ToolError(`${matches.length === 0 ? 'no' : `${matches.length}`} heading "${wanted}" in ${path}; name one heading exactly as it is written (nothing changed)`);
  }
  const start = matches[0] ?? 0;
  const level = /^(#+)/.exec(lines[start] ?? '')?.[1]?.length ?? 6;
  let end = lines.length;
  for (let index = start + 1; index < lines.length; index += 1) {
    const match = /^(#{1,6})\s/.exec(lines[index] ?? '');
    if (match?.[1] && match[1].length <= level) {
      end = index;
      break;
    }
  }
  // Trailing blank lines stay between the section and the next heading.
  while (end > start + 1 && (lines[end - 1] ?? '').trim() === '') end -= 1;
  return { start, end };
}

/** `text` added at the end of the section under `heading`. */
function appendToSection(content: string, heading: string, text: string, path: string): string {
  const { end } = findSection(content, heading, path);
  const lines = content.split('\n');
  const added = text.replace(/\n$/, '').split('\n');
  return [...lines.slice(0, end), ...added, ...lines.slice(end)].join('\n');
}

/** Normalizes a document path: relative, no "..", forward slashes. */
export function normalize(raw: string): string {
  const parts = raw.replace(/\\/g, '/').split('/').filter((part) => part !== '' && part !== '.');
  if (raw.startsWith('/') || parts.some((part) => part === '..')) {
    throw new ToolError(`invalid document path "${raw}": use a relative path without ".."`);
  }
  if (parts.length === 0) throw new ToolError('document path is empty');
  return parts.join('/');
}

function keyFor(raw: string, context: ToolContext): DocumentKey {
  const normalized = normalize(raw);
  const sessionKey = normalized === todoDocumentPath ? context.sessionId : '';
  return { spaceId: context.memorySpaceId, sessionKey, path: normalized };
}

/** Only the summarizer writes space documents, and never TODO.md. */
function writableKey(raw: string, context: ToolContext): DocumentKey {
  const key = keyFor(raw, context);
  const role: AgentRole = context.role;
  if (role === 'worker') {
    throw new ToolError(`you are the worker: ${key.path} is kept by the background memory and you cannot change it; you may only edit your TODO.md with todo_write`);
  }
  if (key.path === todoDocumentPath) {
    throw new ToolError('TODO.md belongs to the worker; as the summarizer, edit MAIN.md or other documents instead');
  }
  return key;
}

function author(context: ToolContext): DocumentAuthor {
  if (context.role === 'summarizer' && context.memoryRunId) return { kind: 'summarizer', memoryRunId: context.memoryRunId, sessionId: context.sessionId };
  return { kind: 'worker', sessionId: context.sessionId };
}
