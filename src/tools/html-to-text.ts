// A small HTML → Markdown-like text converter for web_fetch. It is a tolerant tokenizer, not a
// full HTML parser: enough to give the model readable headings, paragraphs, lists and links at a
// fraction of the tokens of the raw page.

/**
 * A start or end tag at a given position (sticky). A tag never spans another "<", not even in a
 * quoted value: that keeps malformed markup (unclosed quotes) linear instead of quadratic.
 */
const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^<>"']|"[^"<]*"|'[^'<]*')*)>/y;

/** Elements whose content is dropped (page chrome and non-content). */
const DROPPED = new Set(['head', 'nav', 'svg', 'template', 'canvas', 'math', 'select', 'button', 'object']);

/** Elements whose content is raw text (no tags inside), also dropped. */
const RAW_TEXT = new Set(['script', 'style', 'noscript', 'iframe', 'textarea', 'xmp', 'noembed', 'noframes', 'title']);

/** Blocks set apart by a blank line rather than a single line break. */
const PARAGRAPHS = new Set(['p', 'table', 'blockquote', 'figure', 'dl']);

/** Elements that start and end a block (a line break around them). */
const BLOCKS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'header', 'html', 'main', 'p', 'section', 'summary', 'table', 'tbody', 'thead', 'tfoot',
  'tr', 'caption', 'ul', 'ol', 'menu',
]);

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', copy: '©', reg: '®', trade: '™', hellip: '…',
  mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', sbquo: '‚', ldquo: '“', rdquo: '”', bdquo: '„', laquo: '«',
  raquo: '»', bull: '•', middot: '·', times: '×', divide: '÷', euro: '€', pound: '£', yen: '¥', cent: '¢',
  sect: '§', para: '¶', deg: '°', plusmn: '±', frac12: '½', frac14: '¼', frac34: '¾', larr: '←', rarr: '→',
  uarr: '↑', darr: '↓', harr: '↔', minus: '−', le: '≤', ge: '≥', ne: '≠', asymp: '≈', infin: '∞', dagger: '†',
  shy: '', zwj: '', zwnj: '', ensp: ' ', emsp: ' ', thinsp: ' ', iexcl: '¡', iquest: '¿', micro: 'µ',
  auml: 'ä', ouml: 'ö', uuml: 'ü', Auml: 'Ä', Ouml: 'Ö', Uuml: 'Ü', szlig: 'ß', eacute: 'é', egrave: 'è',
  ecirc: 'ê', aacute: 'á', agrave: 'à', acirc: 'â', ccedil: 'ç', ntilde: 'ñ', oacute: 'ó', iacute: 'í', uacute: 'ú',
};

/** Decodes HTML character references (named, decimal and hexadecimal); unknown ones stay as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z][a-z0-9]*);?/gi, (whole, reference: string) => {
    if (reference.startsWith('#')) {
      const code = reference[1] === 'x' || reference[1] === 'X' ? Number.parseInt(reference.slice(2), 16) : Number.parseInt(reference.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : '\uFFFD';
    }
    return NAMED_ENTITIES[reference] ?? whole;
  });
}

/** The document's `<title>`, decoded and collapsed, if it has one. */
export function htmlTitle(html: string): string | undefined {
  const match = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html);
  const title = match?.[1] === undefined ? '' : decodeEntities(match[1]).replace(/\s+/g, ' ').trim();
  return title === '' ? undefined : title;
}

interface OpenLink {
  href: string;
  start: number;
}

interface OpenList {
  ordered: boolean;
  count: number;
}

/** Converts HTML to readable text; relative links are resolved against `baseUrl` when given. */
export function htmlToText(html: string, baseUrl?: string): string {
  const writer = new TextWriter(baseUrl);
  let position = 0;
  while (position < html.length) {
    const open = html.indexOf('<', position);
    if (open === -1) {
      writer.text(decodeEntities(html.slice(position)));
      break;
    }
    if (open > position) writer.text(decodeEntities(html.slice(position, open)));
    if (html.startsWith('<!--', open)) {
      const end = html.indexOf('-->', open + 4);
      position = end === -1 ? html.length : end + 3;
      continue;
    }
    TAG.lastIndex = open;
    const tag = TAG.exec(html);
    if (!tag) {
      // Doctype, CDATA or processing instruction: not content. Anything else is a literal "<".
      const end = html[open + 1] === '!' || html[open + 1] === '?' ? html.indexOf('>', open) : -2;
      if (end === -2) writer.text('<');
      position = end === -2 ? open + 1 : end === -1 ? html.length : end + 1;
      continue;
    }
    position = open + tag[0].length;
    const name = (tag[2] ?? '').toLowerCase();
    const closing = tag[1] === '/';
    if (RAW_TEXT.has(name)) {
      if (!closing) position = skipRawText(html, name, position);
      continue;
    }
    writer.tag(name, closing, tag[3] ?? '');
  }
  return writer.result();
}

/** Position just after the end tag of raw-text element `name` (script, style, …). */
function skipRawText(html: string, name: string, from: number): number {
  const closer = new RegExp(`</${name}`, 'gi');
  closer.lastIndex = from;
  const end = closer.exec(html)?.index ?? -1;
  const close = end === -1 ? -1 : html.indexOf('>', end);
  return close === -1 ? html.length : close + 1;
}

/** Accumulates the converted text and the open lists, links and dropped elements. */
class TextWriter {
  private readonly out: string[] = [];
  private readonly links: OpenLink[] = [];
  private readonly lists: OpenList[] = [];
  private readonly dropped: string[] = [];
  private preDepth = 0;

  constructor(private readonly baseUrl: string | undefined) {}

  text(value: string): void {
    if (this.dropped.length > 0) return;
    if (this.preDepth > 0) {
      this.out.push(value);
      return;
    }
    let collapsed = value.replace(/\s+/g, ' ');
    // No space at the start of a line, and never two spaces in a row.
    if (collapsed.startsWith(' ') && (this.out.length === 0 || /\s$/.test(ending(this.out)))) collapsed = collapsed.slice(1);
    if (collapsed !== '') this.out.push(collapsed);
  }

  tag(name: string, closing: boolean, attributes: string): void {
    const selfClosing = attributes.trimEnd().endsWith('/');
    if (this.dropped.length > 0) {
      if (DROPPED.has(name) && !closing && !selfClosing) this.dropped.push(name);
      else if (closing && name === this.dropped.at(-1)) this.dropped.pop();
      // Pages often leave <head> unclosed; the body always ends it.
      else if (name === 'body' && this.dropped[0] === 'head') this.dropped.length = 0;
      return;
    }
    if (DROPPED.has(name)) {
      if (!closing && !selfClosing) this.dropped.push(name);
    } else if (/^h[1-6]$/.test(name)) {
      this.blankLine();
      if (!closing) this.out.push(`${'#'.repeat(Number(name[1]))} `);
    } else if (name === 'br') {
      this.out.push('\n');
    } else if (name === 'hr') {
      this.blankLine();
      this.out.push('---\n\n');
    } else if (name === 'pre') {
      this.pre(closing);
    } else if (name === 'code') {
      if (this.preDepth === 0) this.out.push('`');
    } else if (name === 'ul' || name === 'ol' || name === 'menu' || name === 'li') {
      this.list(name, closing);
    } else if (name === 'td' || name === 'th') {
      if (!closing && this.out.length > 0 && !ending(this.out).endsWith('\n')) this.out.push(' | ');
    } else if (name === 'a') {
      this.link(closing, attributes);
    } else if (name === 'img') {
      const alt = attribute(attributes, 'alt')?.trim();
      if (alt) this.text(` ${alt} `);
    } else if (BLOCKS.has(name)) {
      if (PARAGRAPHS.has(name)) this.blankLine();
      else this.newline();
    }
  }

  result(): string {
    return this.out
      .join('')
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
  }

  private pre(closing: boolean): void {
    if (closing) {
      this.newline();
      this.out.push('```\n\n');
      this.preDepth = Math.max(0, this.preDepth - 1);
    } else {
      this.blankLine();
      this.out.push('```\n');
      this.preDepth += 1;
    }
  }

  private list(name: string, closing: boolean): void {
    if (name === 'li') {
      if (closing) return;
      this.newline();
      const list = this.lists.at(-1);
      if (list) list.count += 1;
      const indent = '  '.repeat(Math.max(0, this.lists.length - 1));
      this.out.push(`${indent}${list?.ordered ? `${list.count}.` : '-'} `);
      return;
    }
    if (closing) this.lists.pop();
    // A top-level list is its own paragraph; a nested one just starts on a new line.
    if (this.lists.length === 0) this.blankLine();
    else this.newline();
    if (!closing) this.lists.push({ ordered: name === 'ol', count: 0 });
  }

  private link(closing: boolean, attributes: string): void {
    if (!closing) {
      this.links.push({ href: attribute(attributes, 'href') ?? '', start: this.out.length });
      return;
    }
    const link = this.links.pop();
    if (!link) return;
    const label = this.out.splice(link.start).join('').replace(/\s+/g, ' ').trim();
    if (label === '') return;
    const href = resolveHref(link.href, this.baseUrl);
    // In-page anchors and script links mean nothing outside the page: keep only the text.
    this.out.push(href === undefined ? label : `[${label}](${href})`);
  }

  private newline(): void {
    if (this.out.length > 0 && !ending(this.out).endsWith('\n')) this.out.push('\n');
  }

  private blankLine(): void {
    if (this.out.length === 0) return;
    this.newline();
    if (ending(this.out) !== '\n\n') this.out.push('\n');
  }
}

/** The last two characters written (chunks may be shorter than two characters or empty). */
function ending(out: string[]): string {
  let result = '';
  for (let index = out.length - 1; index >= 0 && result.length < 2; index -= 1) result = (out[index] ?? '') + result;
  return result.slice(-2);
}

function resolveHref(href: string, baseUrl: string | undefined): string | undefined {
  const decoded = decodeEntities(href).trim();
  if (decoded === '' || decoded.startsWith('#') || /^(javascript|data|vbscript):/i.test(decoded)) return undefined;
  if (baseUrl === undefined) return decoded;
  try {
    return new URL(decoded, baseUrl).toString();
  } catch {
    return decoded;
  }
}

function attribute(attributes: string, wanted: string): string | undefined {
  const pattern = /([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g;
  for (let match = pattern.exec(attributes); match; match = pattern.exec(attributes)) {
    if (match[1]?.toLowerCase() === wanted) return decodeEntities(match[2] ?? match[3] ?? match[4] ?? '');
  }
  return undefined;
}
