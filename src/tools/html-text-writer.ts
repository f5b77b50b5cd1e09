// Turns a stream of HTML tokens into Markdown-like text: headings, paragraphs, lists, links,
// code. Pages are untrusted, so every structure it keeps is bounded while it writes: the output
// stops at a character cap, list indentation stops growing at a few levels, nesting is counted
// rather than stacked, and links cannot nest (a new <a> ends the open one, as in browsers), so
// each written character is touched a bounded number of times.

/** Elements whose content is dropped (page chrome and non-content). */
const DROPPED = new Set(['head', 'nav', 'svg', 'template', 'canvas', 'math', 'select', 'button', 'object', 'noscript']);

/** Blocks set apart by a blank line rather than a single line break. */
const PARAGRAPHS = new Set(['p', 'table', 'blockquote', 'figure', 'dl']);

/** Elements that start and end a block (a line break around them). */
const BLOCKS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'header', 'html', 'main', 'p', 'section', 'summary', 'table', 'tbody', 'thead', 'tfoot',
  'tr', 'caption', 'ul', 'ol', 'menu',
]);

const LISTS = new Set(['ul', 'ol', 'menu']);

/** Most open lists remembered one by one (for numbering); deeper ones are only counted. */
const MAX_LIST_STACK = 64;

/** Limits of one conversion. */
export interface HtmlTextLimits {
  /** Most characters written; the writer stops (and says so) when it is reached. */
  maxChars: number;
  /** Deepest list level shown by indentation; deeper items keep that indentation. */
  maxIndentLevels: number;
}

/** Attributes the writer uses (already entity-decoded). */
export interface TagAttributes {
  href?: string;
  alt?: string;
}

interface OpenList {
  ordered: boolean;
  count: number;
}

interface OpenLink {
  href: string;
  /** Index of the first output chunk of the label. */
  start: number;
}

/** Accumulates the converted text within HtmlTextLimits. */
export class HtmlTextWriter {
  private readonly out: string[] = [];
  private length = 0;
  /** The last two characters written (for "at the start of a line" and blank-line checks). */
  private tail = '';
  private readonly lists: OpenList[] = [];
  private deeperLists = 0;
  private link: OpenLink | undefined;
  private droppedDepth = 0;
  private droppedRoot = '';
  private preDepth = 0;
  private reachedCap = false;

  constructor(
    private readonly baseUrl: string | undefined,
    private readonly limits: HtmlTextLimits,
  ) {}

  /** True once maxChars was reached; everything after is ignored. */
  get full(): boolean {
    return this.reachedCap;
  }

  /** Text content (entity-decoded). */
  text(value: string): void {
    if (this.droppedDepth > 0 || this.reachedCap || value === '') return;
    if (this.preDepth > 0) {
      this.push(value);
      return;
    }
    let collapsed = value.replace(/\s+/g, ' ');
    // No space at the start of a line, and never two spaces in a row.
    if (collapsed.startsWith(' ') && (this.length === 0 || /\s$/.test(this.tail))) collapsed = collapsed.slice(1);
    this.push(collapsed);
  }

  /** A start tag (lower-case name). */
  open(name: string, attributes: TagAttributes, selfClosing: boolean): void {
    if (this.reachedCap) return;
    if (this.droppedDepth > 0) {
      if (DROPPED.has(name) && !selfClosing) this.droppedDepth += 1;
      // Pages often leave <head> unclosed; the body always ends it.
      else if (name === 'body' && this.droppedRoot === 'head') this.droppedDepth = 0;
      return;
    }
    if (DROPPED.has(name)) {
      if (!selfClosing) {
        this.droppedDepth = 1;
        this.droppedRoot = name;
      }
    } else if (/^h[1-6]$/.test(name)) {
      this.blankLine();
      this.push(`${'#'.repeat(Number(name[1]))} `);
    } else if (name === 'br') {
      this.push('\n');
    } else if (name === 'hr') {
      this.blankLine();
      this.push('---\n\n');
    } else if (name === 'pre') {
      this.blankLine();
      this.push('```\n');
      this.preDepth += 1;
    } else if (name === 'code') {
      if (this.preDepth === 0) this.push('`');
    } else if (LISTS.has(name)) {
      this.listBreak();
      if (this.lists.length < MAX_LIST_STACK) this.lists.push({ ordered: name === 'ol', count: 0 });
      else this.deeperLists += 1;
    } else if (name === 'li') {
      this.listItem();
    } else if (name === 'td' || name === 'th') {
      if (this.length > 0 && !this.tail.endsWith('\n')) this.push(' | ');
    } else if (name === 'a') {
      // Links do not nest: a new one ends the open one, as browsers do.
      this.endLink();
      this.link = { href: attributes.href ?? '', start: this.out.length };
    } else if (name === 'img') {
      const alt = attributes.alt?.trim();
      if (alt) this.text(` ${alt} `);
    } else if (BLOCKS.has(name)) {
      this.blockBreak(name);
    }
  }

  /** An end tag (lower-case name). */
  close(name: string): void {
    if (this.reachedCap) return;
    if (this.droppedDepth > 0) {
      if (DROPPED.has(name)) this.droppedDepth -= 1;
      return;
    }
    if (/^h[1-6]$/.test(name)) {
      this.blankLine();
    } else if (name === 'br') {
      // Browsers read </br> as <br>.
      this.push('\n');
    } else if (name === 'pre') {
      if (this.preDepth === 0) return;
      this.newline();
      this.push('```\n\n');
      this.preDepth -= 1;
    } else if (name === 'code') {
      if (this.preDepth === 0) this.push('`');
    } else if (LISTS.has(name)) {
      if (this.deeperLists > 0) this.deeperLists -= 1;
      else this.lists.pop();
      this.listBreak();
    } else if (name === 'a') {
      this.endLink();
    } else if (BLOCKS.has(name)) {
      this.blockBreak(name);
    }
  }

  /** The text written so far, with trailing spaces and runs of blank lines removed. */
  result(): string {
    return this.out
      .join('')
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
  }

  private listItem(): void {
    this.newline();
    const list = this.lists.at(-1);
    if (list) list.count += 1;
    const depth = this.lists.length + this.deeperLists;
    const indent = '  '.repeat(Math.min(Math.max(0, depth - 1), this.limits.maxIndentLevels));
    this.push(`${indent}${list?.ordered && this.deeperLists === 0 ? `${list.count}.` : '-'} `);
  }

  /** A top-level list is its own paragraph; a nested one just starts on a new line. */
  private listBreak(): void {
    if (this.lists.length === 0) this.blankLine();
    else this.newline();
  }

  private blockBreak(name: string): void {
    if (PARAGRAPHS.has(name)) this.blankLine();
    else this.newline();
  }

  private endLink(): void {
    const link = this.link;
    if (!link) return;
    this.link = undefined;
    const removed = this.out.splice(link.start);
    const labelText = removed.join('');
    this.length -= labelText.length;
    this.tail = '';
    for (let index = this.out.length - 1; index >= 0 && this.tail.length < 2; index -= 1) this.tail = (this.out[index] ?? '') + this.tail;
    this.tail = this.tail.slice(-2);
    const label = labelText.replace(/\s+/g, ' ').trim();
    if (label === '') return;
    const href = resolveHref(link.href, this.baseUrl);
    // Spaces at the edges of the label still separate it from the words around it.
    if (/^\s/.test(labelText) && this.length > 0 && !/\s$/.test(this.tail)) this.push(' ');
    // In-page anchors and script links mean nothing outside the page: keep only the text.
    this.push(href === undefined ? label : `[${label}](${href})`);
    if (/\s$/.test(labelText)) this.push(' ');
  }

  private newline(): void {
    if (this.length > 0 && !this.tail.endsWith('\n')) this.push('\n');
  }

  private blankLine(): void {
    if (this.length === 0) return;
    this.newline();
    if (this.tail !== '\n\n') this.push('\n');
  }

  private push(chunk: string): void {
    if (chunk === '' || this.reachedCap) return;
    const room = this.limits.maxChars - this.length;
    if (chunk.length >= room) {
      chunk = chunk.slice(0, room);
      this.reachedCap = true;
      if (chunk === '') return;
    }
    this.out.push(chunk);
    this.length += chunk.length;
    this.tail = (this.tail + chunk).slice(-2);
  }
}

/** Most characters of a link target kept; longer ones are not links a reader can use. */
const MAX_HREF_CHARS = 4_096;

function resolveHref(href: string, baseUrl: string | undefined): string | undefined {
  const trimmed = href.trim();
  if (trimmed === '' || trimmed.length > MAX_HREF_CHARS || trimmed.startsWith('#') || /^(javascript|data|vbscript):/i.test(trimmed)) return undefined;
  if (baseUrl === undefined) return trimmed;
  try {
    return new URL(trimmed, baseUrl).toString();
  } catch {
    return trimmed;
  }
}
