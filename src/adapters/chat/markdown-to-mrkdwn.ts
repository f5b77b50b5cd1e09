// Converts the Markdown the model writes into Slack's mrkdwn, for workspaces where Slack refuses
// `markdown_text`: **bold** → *bold*, [t](u) → <u|t>, headings → bold lines, bullets → •, code kept
// verbatim, tables → an aligned code block (mrkdwn has no tables). Everything else is text: `&`, `<`
// and `>` escaped (no mention or link of the model's own making), and a link whose text reads as
// another address shows its real host (link-host.ts).
import { realHostNote } from './link-host.js';

const fenceLine = /^(\s*)(`{3,}|~{3,})(.*)$/;
const tableSeparator = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;

/** Converts Markdown to Slack mrkdwn. */
export function markdownToMrkdwn(markdown: string): string {
  const lines = markdown.split('\n');
  const out: string[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    const fence = fenceLine.exec(line);
    if (fence) {
      const [, indent = '', marker = '```'] = fence;
      // mrkdwn has no language tags: the info string would show as the first code line.
      out.push(`${indent}\`\`\``);
      const closing = new RegExp(`^\\s*${marker[0] === '`' ? '`' : '~'}{${marker.length},}\\s*$`);
      for (index += 1; index < lines.length; index += 1) {
        const inner = lines[index] ?? '';
        if (closing.test(inner)) break;
        out.push(escapeText(inner));
      }
      out.push(`${indent}\`\`\``);
      continue;
    }
    if (isTableRow(line) && tableSeparator.test(lines[index + 1] ?? '')) {
      const rows = [cells(line)];
      index += 1; // the separator
      while (index + 1 < lines.length && isTableRow(lines[index + 1] ?? '')) {
        index += 1;
        rows.push(cells(lines[index] ?? ''));
      }
      out.push(...renderTable(rows));
      continue;
    }
    out.push(convertLine(line));
  }
  return out.join('\n');
}

/** One line outside code blocks and tables. */
function convertLine(line: string): string {
  const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) return `*${convertInline(stripEmphasis(heading[1] ?? ''))}*`;
  if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return '──────────';
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) {
    const [, indent = '', rest = ''] = bullet;
    const task = /^\[([ xX])\]\s+(.*)$/.exec(rest);
    if (task) return `${indent}${task[1] === ' ' ? '☐' : '☑'} ${convertInline(task[2] ?? '')}`;
    return `${indent}• ${convertInline(rest)}`;
  }
  const quote = /^(\s*>\s?)(.*)$/.exec(line);
  if (quote) return `>${quote[2] ? ' ' : ''}${convertInline(quote[2] ?? '')}`;
  return convertInline(line);
}

/** Inline formatting, leaving `code spans` untouched (but escaped). */
function convertInline(text: string): string {
  return text
    .split(/(`[^`\n]+`)/)
    .map((piece, index) => (index % 2 === 1 ? escapeText(piece) : convertSpan(piece)))
    .join('');
}

function convertSpan(text: string): string {
  // Placeholders keep generated mrkdwn from being escaped or re-matched by later rules.
  const saved: string[] = [];
  const hold = (value: string) => `\u0000${saved.push(value) - 1}\u0000`;
  let result = text
    // An autolink is a bare URL: a `|` in it would give it a label of its own.
    .replace(/<(https?:\/\/[^>\s|]+)>/g, (_match, url: string) => hold(`<${url}>`))
    // Linear: the text stops at a bracket, the URL at a parenthesis it does not balance.
    .replace(/!?\[([^[\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)(?:\s+"[^"\n]*")?\)/g, (_match, label: string, url: string) =>
      hold(`<${url.replace(/[|<>]/g, encodeURIComponent)}|${escapeText(stripEmphasis(label)).replace(/[|]/g, '¦')}>${escapeText(realHostNote(label, url))}`),
    );
  result = escapeText(result)
    .replace(/\*\*(?=\S)(.+?)(?<=\S)\*\*/g, (_match, inner: string) => hold(`*${inner}*`))
    .replace(/__(?=\S)(.+?)(?<=\S)__/g, (_match, inner: string) => hold(`*${inner}*`))
    .replace(/(^|[^*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?!\w)/g, (_match, before: string, inner: string) => `${before}${hold(`_${inner}_`)}`)
    .replace(/~~(?=\S)(.+?)(?<=\S)~~/g, (_match, inner: string) => hold(`~${inner}~`));
  // Restore innermost-last: a placeholder may hold another (bold inside a link label is stripped).
  for (let pass = 0; pass < 3 && result.includes('\u0000'); pass += 1) {
    result = result.replace(/\u0000(\d+)\u0000/g, (_match, index: string) => saved[Number(index)] ?? '');
  }
  return result;
}

/** Slack requires &, < and > escaped in message text. */
function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function stripEmphasis(text: string): string {
  return text.replace(/\*\*|__|`/g, '');
}

function isTableRow(line: string): boolean {
  return /^\s*\|.*\|\s*$/.test(line);
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => stripEmphasis(cell.trim().replace(/\\\|/g, '|')));
}

/** A table as a code block with padded columns and a rule under the header. */
function renderTable(rows: string[][]): string[] {
  const columns = Math.max(...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_unused, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const render = (row: string[]) =>
    widths.map((width, column) => (row[column] ?? '').padEnd(width)).join(' | ').trimEnd();
  const [header = [], ...body] = rows;
  const rule = widths.map((width) => '-'.repeat(Math.max(width, 1))).join('-+-');
  return ['```', escapeText(render(header)), rule, ...body.map((row) => escapeText(render(row))), '```'];
}
