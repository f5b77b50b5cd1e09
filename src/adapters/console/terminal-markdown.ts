// Markdown for a terminal: bold, italics, inline code, code blocks, headings, lists, quotes and
// links turned into ANSI styles (or into plain text when the output is not a terminal), fed in
// pieces as an answer streams. Everything it prints went through `terminalSafe` first: text from
// the model, a fetched page or the memory never reaches the terminal with its own escape codes.
// One pass, near-linear: at most `holdLimit` characters are held back while a marker is undecided.

/** Opening and closing codes of each style ('' in plain output). */
export interface TerminalStyles {
  bold: readonly [string, string];
  italic: readonly [string, string];
  code: readonly [string, string];
  heading: readonly [string, string];
  dim: readonly [string, string];
}

/** SGR codes; each style closes only itself (22 also ends dim, which never wraps bold). */
export const ansiStyles: TerminalStyles = {
  bold: ['\x1b[1m', '\x1b[22m'],
  italic: ['\x1b[3m', '\x1b[23m'],
  code: ['\x1b[36m', '\x1b[39m'],
  heading: ['\x1b[1;4m', '\x1b[22;24m'],
  dim: ['\x1b[2m', '\x1b[22m'],
};

/** No codes: the markers are dropped and the text kept. */
export const plainStyles: TerminalStyles = { bold: ['', ''], italic: ['', ''], code: ['', ''], heading: ['', ''], dim: ['', ''] };

/** C0 and C1 controls (but tab and line feed), DEL, and the bidirectional overrides. */
// eslint-disable-next-line no-control-regex
const unsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The text with every control character replaced by "�" (carriage returns dropped), so stored or
 * fetched text cannot move the cursor, erase lines, set the title or write the clipboard (OSC 52).
 */
export function terminalSafe(text: string): string {
  return text.replace(/\r/g, '').replace(unsafe, '\uFFFD');
}

/** Where inline code ends, a link (its text and address up to 500 characters each), a link whose end may still come, and the next character that may start a marker. */
const codeEnd = /[`\n]/g;
const linkPattern = /\[([^[\]\n]{1,500})\]\(([^()\s]{1,500})\)/y;
const partialLink = /^\[[^[\]\n]{0,500}(\](\([^()\s]{0,500})?)?$/;
const markerStart = /[\n`\\*_[]/g;

function word(value: string | undefined): boolean {
  return value !== undefined && /[\p{L}\p{N}]/u.test(value);
}

function space(value: string | undefined): boolean {
  return value === undefined || /\s/.test(value);
}

/** Characters held back at most while deciding what a marker is (a link's text and address). */
const holdLimit = 1_000;

/** Renders Markdown fed in pieces; `write` returns what may be printed now, `end` the rest. */
export class TerminalMarkdown {
  private pending = '';
  private lineStart = true;
  private fence = false;
  private heading = false;
  private bold = false;
  private italic = false;
  private code = false;
  /** The last character rendered before the current piece (for markers split across pieces). */
  private last = '\n';

  constructor(private readonly styles: TerminalStyles) {}

  write(text: string): string {
    return this.render(this.pending + terminalSafe(text), false);
  }

  /** Flushes what was held back (an unclosed marker prints as written) and closes open styles. */
  end(): string {
    let out = this.render(this.pending, true) + this.closeInline();
    if (this.fence && !this.lineStart) out += this.styles.code[1];
    this.lineStart = true;
    this.fence = false;
    this.last = '\n';
    return out;
  }

  private render(text: string, final: boolean): string {
    let out = '';
    let index = 0;
    this.pending = '';
    const hold = () => {
      this.pending = text.slice(index);
      if (index > 0) this.last = text[index - 1] ?? this.last;
      return out;
    };
    while (index < text.length) {
      if (this.lineStart) {
        const lineEnd = text.indexOf('\n', index);
        const prefix = text.slice(index, lineEnd < 0 ? index + 8 : Math.min(lineEnd, index + 8));
        // Not enough of the line yet to know whether it is a fence, heading, list item or quote.
        if (lineEnd < 0 && !final && text.length - index < 8) return hold();
        const fence = /^ {0,3}```/.test(prefix);
        if (fence) {
          // The fence line (with its language) is not printed; the block is indented.
          if (lineEnd < 0 && !final && text.length - index < holdLimit) return hold();
          this.fence = !this.fence;
          index = lineEnd < 0 ? text.length : lineEnd + 1;
          continue;
        }
        this.lineStart = false;
        if (this.fence) {
          out += `  ${this.styles.code[0]}`;
        } else {
          const marker = /^(\s*)(#{1,6} |[-*+] |> ?)/.exec(prefix);
          if (marker?.[2]) {
            const kind = marker[2];
            index += marker[0].length;
            if (kind.startsWith('#')) {
              this.heading = true;
              out += this.styles.heading[0];
            } else if (kind.startsWith('>')) {
              out += `${this.styles.dim[0]}│${this.styles.dim[1]} `;
            } else {
              out += `${marker[1] ?? ''}• `;
            }
          }
        }
        continue;
      }
      const char = text[index]!;
      if (char === '\n') {
        out += this.closeInline();
        if (this.fence) out += this.styles.code[1];
        out += '\n';
        this.lineStart = true;
        index += 1;
        continue;
      }
      if (this.fence) {
        const lineEnd = text.indexOf('\n', index);
        const end = lineEnd < 0 ? text.length : lineEnd;
        out += text.slice(index, end);
        index = end;
        continue;
      }
      if (this.code) {
        // Inline code is literal up to its closing backtick (or the line's end).
        codeEnd.lastIndex = index;
        const end = codeEnd.exec(text)?.index ?? text.length;
        out += text.slice(index, end);
        index = end;
        if (text[index] === '`') {
          out += this.styles.code[1];
          this.code = false;
          index += 1;
        }
        continue;
      }
      if (char === '`') {
        out += this.styles.code[0];
        this.code = true;
        index += 1;
        continue;
      }
      if (char === '\\') {
        if (index + 1 >= text.length && !final) return hold();
        const next = text[index + 1];
        out += next !== undefined && /[\\`*_[\]()#>+\-.!|~]/.test(next) ? next : char;
        index += next !== undefined && /[\\`*_[\]()#>+\-.!|~]/.test(next) ? 2 : 1;
        continue;
      }
      if (char === '*' || char === '_') {
        if (index + 2 >= text.length && !final) return hold();
        const before = index > 0 ? text[index - 1] : this.last;
        const double = text[index + 1] === char;
        const after = text[index + (double ? 2 : 1)];
        // Underscores inside words (snake_case) are text; a marker needs a word on its inner side.
        const opens = !space(after) && (char === '*' || !word(before));
        const closes = !space(before) && (char === '*' || !word(after));
        if (double && ((this.bold && closes) || (!this.bold && opens))) {
          out += this.bold ? this.styles.bold[1] : this.styles.bold[0];
          this.bold = !this.bold;
          index += 2;
          continue;
        }
        if (!double && ((this.italic && closes) || (!this.italic && opens))) {
          out += this.italic ? this.styles.italic[1] : this.styles.italic[0];
          this.italic = !this.italic;
          index += 1;
          continue;
        }
        out += double ? char + char : char;
        index += double ? 2 : 1;
        continue;
      }
      if (char === '[') {
        linkPattern.lastIndex = index;
        const link = linkPattern.exec(text);
        if (!link) {
          // Maybe a link whose end has not arrived yet.
          if (!final && text.length - index < holdLimit && partialLink.test(text.slice(index))) return hold();
          out += char;
          index += 1;
          continue;
        }
        const [whole, label = '', address = ''] = link;
        out += label === address ? address : `${label} ${this.styles.dim[0]}(${address})${this.styles.dim[1]}`;
        index += whole.length;
        continue;
      }
      // Plain text up to the next character that may be a marker.
      markerStart.lastIndex = index + 1;
      const end = markerStart.exec(text)?.index ?? text.length;
      out += text.slice(index, end);
      index = end;
    }
    if (index > 0) this.last = text[index - 1] ?? this.last;
    return out;
  }

  /** Closes inline styles and a heading at the end of a line (emphasis never bleeds further). */
  private closeInline(): string {
    let out = '';
    if (this.code) out += this.styles.code[1];
    if (this.italic) out += this.styles.italic[1];
    if (this.bold) out += this.styles.bold[1];
    if (this.heading) out += this.styles.heading[1];
    this.code = this.italic = this.bold = this.heading = false;
    return out;
  }
}

/** Renders a whole Markdown text. */
export function renderMarkdown(text: string, styles: TerminalStyles): string {
  const renderer = new TerminalMarkdown(styles);
  return renderer.write(text) + renderer.end();
}
