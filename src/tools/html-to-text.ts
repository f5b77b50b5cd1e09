// HTML → Markdown-like text for web_fetch: readable headings, paragraphs, lists and links at a
// fraction of the tokens of the raw page. Pages are hostile input, so the conversion is linear:
// htmlparser2's Tokenizer (a streaming state machine, fed in slices; its Parser is not used, as
// its stack of open elements costs O(depth) per tag) drives our bounded HtmlTextWriter, entities
// are decoded with the full HTML table (the `entities` package), and a time budget is checked
// after every slice. bench/hostile-html.ts measures this against the alternatives.
import { decodeHTML } from 'entities';
import { Tokenizer } from 'htmlparser2';
import { HtmlTextWriter, type TagAttributes } from './html-text-writer.js';

/** Settings of one conversion. */
export interface HtmlToTextOptions {
  /** Relative links are resolved against it. */
  baseUrl?: string;
  /** Most characters of text produced (default 2,000,000). */
  maxChars?: number;
  /** Deepest list level shown by indentation (default 6). */
  maxIndentLevels?: number;
  /** Time at which conversion stops, on the performance.now() clock (default: 2 s from the start). */
  deadline?: number;
}

/** A converted page. */
export interface HtmlText {
  text: string;
  /** The first `<title>`, decoded and collapsed, if it has one (at most 1,000 characters). */
  title?: string;
  /** Why the text ends before the page does: the character cap or the time budget. */
  stopped?: 'size' | 'time';
}

/** Default cap on the converted text, in characters. */
export const DEFAULT_MAX_TEXT_CHARS = 2_000_000;

/** Default deepest list indentation, in levels. */
export const DEFAULT_MAX_INDENT_LEVELS = 6;

/** Default time budget of one conversion, in milliseconds. */
export const DEFAULT_CONVERT_BUDGET_MS = 2_000;

/** Input is fed to the tokenizer in slices this long; limits are checked between slices. */
const SLICE_CHARS = 64 * 1024;

/** Most characters of one attribute value kept (href, alt). */
const MAX_ATTRIBUTE_CHARS = 8_192;

/** Most characters of the title kept. */
const MAX_TITLE_CHARS = 1_000;

/** Elements whose content the tokenizer reads as raw text; their text is not page content. */
const RAW_TEXT = new Set(['script', 'style', 'iframe', 'textarea', 'xmp', 'noembed', 'noframes', 'title', 'plaintext']);

/** Decodes every HTML character reference (named, decimal, hexadecimal), as browsers do. */
export function decodeEntities(text: string): string {
  return decodeHTML(text);
}

/** Converts HTML to readable text within the limits of `options`; never throws on bad markup. */
export function convertHtml(html: string, options: HtmlToTextOptions = {}): HtmlText {
  const writer = new HtmlTextWriter(options.baseUrl, {
    maxChars: options.maxChars ?? DEFAULT_MAX_TEXT_CHARS,
    maxIndentLevels: options.maxIndentLevels ?? DEFAULT_MAX_INDENT_LEVELS,
  });
  const deadline = options.deadline ?? performance.now() + DEFAULT_CONVERT_BUDGET_MS;
  const title = new TitleCollector();
  let pendingText: string[] = [];
  let tagName = '';
  let attributes: TagAttributes = {};
  let attributeName = '';
  let attributeValue: string[] | undefined;
  let attributeLength = 0;
  let rawTextOf: string | undefined;

  const addText = (value: string): void => {
    if (rawTextOf === 'title') title.add(value);
    else if (rawTextOf === undefined) pendingText.push(value);
  };
  // Text arrives in pieces (around entities, at slice ends); the writer gets it whole.
  const flushText = (): void => {
    if (pendingText.length === 0) return;
    writer.text(pendingText.join(''));
    pendingText = [];
  };
  const addAttribute = (value: string): void => {
    if (attributeValue === undefined || attributeLength >= MAX_ATTRIBUTE_CHARS) return;
    const piece = value.slice(0, MAX_ATTRIBUTE_CHARS - attributeLength);
    attributeValue.push(piece);
    attributeLength += piece.length;
  };
  const openTag = (selfClosing: boolean): void => {
    if (RAW_TEXT.has(tagName)) {
      rawTextOf = tagName;
      if (tagName === 'title') title.open();
      return;
    }
    writer.open(tagName, attributes, selfClosing);
  };

  const tokenizer = new Tokenizer({ decodeEntities: true }, {
    ontext: (start, end) => addText(html.slice(start, end)),
    ontextentity: (codePoint) => addText(String.fromCodePoint(codePoint)),
    onopentagname: (start, end) => {
      flushText();
      tagName = html.slice(start, end).toLowerCase();
      attributes = {};
    },
    onattribname: (start, end) => {
      attributeName = html.slice(start, end).toLowerCase();
      const wanted = (tagName === 'a' && attributeName === 'href') || (tagName === 'img' && attributeName === 'alt');
      attributeValue = wanted ? [] : undefined;
      attributeLength = 0;
    },
    onattribdata: (start, end) => addAttribute(html.slice(start, Math.min(end, start + MAX_ATTRIBUTE_CHARS))),
    onattribentity: (codePoint) => addAttribute(String.fromCodePoint(codePoint)),
    onattribend: () => {
      // The first of repeated attributes counts, as in browsers.
      if (attributeValue !== undefined && (attributeName === 'href' || attributeName === 'alt') && attributes[attributeName] === undefined) {
        attributes[attributeName] = attributeValue.join('');
      }
      attributeValue = undefined;
    },
    onopentagend: () => openTag(false),
    onselfclosingtag: () => openTag(true),
    onclosetag: (start, end) => {
      const name = html.slice(start, end).toLowerCase();
      if (rawTextOf !== undefined) {
        // The tokenizer leaves raw text only at the matching end tag.
        if (name === rawTextOf) {
          if (name === 'title') title.close();
          rawTextOf = undefined;
        }
        return;
      }
      flushText();
      writer.close(name);
    },
    oncdata: () => undefined,
    oncomment: () => undefined,
    ondeclaration: () => undefined,
    onprocessinginstruction: () => undefined,
    onend: () => undefined,
  });

  let stopped: HtmlText['stopped'];
  for (let offset = 0; offset < html.length; offset += SLICE_CHARS) {
    tokenizer.write(html.slice(offset, offset + SLICE_CHARS));
    if (pendingText.length > 0) flushText();
    if (writer.full) stopped = 'size';
    else if (performance.now() > deadline) stopped = 'time';
    if (stopped !== undefined) break;
  }
  if (stopped === undefined) tokenizer.end();
  flushText();
  if (writer.full) stopped = 'size';
  const result: HtmlText = { text: writer.result() };
  const titleText = title.result();
  if (titleText !== undefined) result.title = titleText;
  if (stopped !== undefined) result.stopped = stopped;
  return result;
}

/** Converts HTML to readable text; relative links are resolved against `baseUrl` when given. */
export function htmlToText(html: string, baseUrl?: string): string {
  return convertHtml(html, baseUrl === undefined ? {} : { baseUrl }).text;
}

/** Keeps the text of the first `<title>`, up to MAX_TITLE_CHARS. */
class TitleCollector {
  private parts: string[] = [];
  private length = 0;
  private state: 'before' | 'inside' | 'done' = 'before';

  open(): void {
    if (this.state === 'before') this.state = 'inside';
  }

  add(value: string): void {
    if (this.state !== 'inside' || this.length >= MAX_TITLE_CHARS) return;
    const piece = value.slice(0, MAX_TITLE_CHARS - this.length);
    this.parts.push(piece);
    this.length += piece.length;
  }

  close(): void {
    if (this.state === 'inside') this.state = 'done';
  }

  result(): string | undefined {
    const title = this.parts.join('').replace(/\s+/g, ' ').trim();
    return title === '' ? undefined : title;
  }
}
