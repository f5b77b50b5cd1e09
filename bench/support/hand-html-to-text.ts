// The pre-#15 hand-written tokenizer, fixed: the same regex tag scanner, now driving the bounded
// HtmlTextWriter, with a linear title scan and the full entity table. Kept only as a benchmark
// candidate (bench/hostile-html.ts) against htmlparser2's Tokenizer, which src/ uses.
import { decodeHTML } from 'entities';
import { HtmlTextWriter, type TagAttributes } from '../../src/tools/html-text-writer.js';

/** A start or end tag at a given position (sticky); never spans another "<" (stays linear). */
const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^<>"']|"[^"<]*"|'[^'<]*')*)>/y;

const RAW_TEXT = new Set(['script', 'style', 'iframe', 'textarea', 'xmp', 'noembed', 'noframes', 'title', 'plaintext']);

/** Converts HTML like src/tools/html-to-text.ts convertHtml, with the hand-written scanner. */
export function handConvertHtml(html: string, deadline = performance.now() + 2_000): { text: string; title?: string; stopped?: 'size' | 'time' } {
  const writer = new HtmlTextWriter(undefined, { maxChars: 2_000_000, maxIndentLevels: 6 });
  let title: string | undefined;
  let position = 0;
  let steps = 0;
  let stopped: 'size' | 'time' | undefined;
  while (position < html.length) {
    steps += 1;
    if (steps % 4096 === 0 && performance.now() > deadline) {
      stopped = 'time';
      break;
    }
    const open = html.indexOf('<', position);
    if (open === -1) {
      writer.text(decodeHTML(html.slice(position)));
      break;
    }
    if (open > position) writer.text(decodeHTML(html.slice(position, open)));
    if (html.startsWith('<!--', open)) {
      const end = html.indexOf('-->', open + 4);
      position = end === -1 ? html.length : end + 3;
      continue;
    }
    TAG.lastIndex = open;
    const tag = TAG.exec(html);
    if (!tag) {
      const end = html[open + 1] === '!' || html[open + 1] === '?' ? html.indexOf('>', open) : -2;
      if (end === -2) writer.text('<');
      position = end === -2 ? open + 1 : end === -1 ? html.length : end + 1;
      continue;
    }
    position = open + tag[0].length;
    const name = (tag[2] ?? '').toLowerCase();
    const closing = tag[1] === '/';
    if (RAW_TEXT.has(name)) {
      if (closing) continue;
      const end = rawTextEnd(html, name, position);
      if (name === 'title' && title === undefined) title = decodeHTML(html.slice(position, Math.min(end.contentEnd, position + 1_000))).replace(/\s+/g, ' ').trim();
      position = end.after;
      continue;
    }
    const attributes = tag[3] ?? '';
    if (closing) writer.close(name);
    else writer.open(name, pickAttributes(attributes), attributes.trimEnd().endsWith('/'));
    if (writer.full) {
      stopped = 'size';
      break;
    }
  }
  const result: { text: string; title?: string; stopped?: 'size' | 'time' } = { text: writer.result() };
  if (title) result.title = title;
  if (stopped) result.stopped = stopped;
  return result;
}

/** Where the raw text of `name` ends (case-insensitive `</name`), found with one linear scan. */
function rawTextEnd(html: string, name: string, from: number): { contentEnd: number; after: number } {
  const closer = new RegExp(`</${name}`, 'gi');
  closer.lastIndex = from;
  const end = closer.exec(html)?.index ?? -1;
  if (end === -1) return { contentEnd: html.length, after: html.length };
  const close = html.indexOf('>', end);
  return { contentEnd: end, after: close === -1 ? html.length : close + 1 };
}

function pickAttributes(attributes: string): TagAttributes {
  const picked: TagAttributes = {};
  const pattern = /([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g;
  for (let match = pattern.exec(attributes); match; match = pattern.exec(attributes)) {
    const name = match[1]?.toLowerCase();
    if ((name === 'href' || name === 'alt') && picked[name] === undefined) picked[name] = decodeHTML(match[2] ?? match[3] ?? match[4] ?? '').slice(0, 8_192);
  }
  return picked;
}
