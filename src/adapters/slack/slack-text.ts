// Model-written text on its way to Slack, made to say only what it says. Slack reads `<…>` as its
// own syntax in every text it is sent (`<!channel>` pings a channel, `<@U…>` a person,
// `<https://evil|https://slack.com/help>` dresses one link as another) and `&…;` as entities, in
// `markdown_text` as in mrkdwn, task cards and notification text. Slack's rule: `&`, `<` and `>`
// as `&amp;`, `&lt;` and `&gt;`. A Markdown link whose text reads as another address gets its real
// host beside it (link-host.ts). One pass each, linear in the text (answers, chunks and notes are
// bounded before they come here; the work stays linear on any size).
import { realHostNote } from '../chat/link-host.js';
import { splitMessage } from '../chat/split-message.js';

/** Most characters of Slack Markdown in one message: `markdown_text`'s limit, and all `markdown` blocks' together. */
export const slackMarkdownChars = 12_000;

/**
 * Markdown links ([text](url "title")): the text stops at the next bracket and the URL at the
 * next parenthesis or space, so no character is read by two attempts (linear on any input).
 */
const markdownLink = /\[([^[\]\n]*)\]\(([^()\s]*)(?:\s+"[^"\n()]*")?\)/g;

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** Plain text for any field Slack parses (chunk titles and outputs, notification text): one pass. */
export function slackText(text: string): string {
  return text.replace(/[&<>]/g, (character) => entities[character] ?? character);
}

/** A line's leading quote markers (`> `, `> > `), which Markdown reads as a quote. */
const quoteMarkers = /^[ \t]{0,3}(?:>[ \t]?)+/;

/**
 * Markdown for `markdown_text`: Slack's control characters escaped, except a line's leading `>`
 * quote markers (Markdown's quotes; no Slack syntax opens without `<`), and look-alike links shown
 * with their real host. The text is its own prefix-stable image: the text of a longer stream
 * starts with the text of its shorter one (a note is added only after a link's closing `)`).
 */
export function slackMarkdown(markdown: string): string {
  const noted = markdown.replace(markdownLink, (link: string, label: string, url: string) => `${link}${realHostNote(label, url)}`);
  return noted
    .split('\n')
    .map((line) => {
      const quote = quoteMarkers.exec(line)?.[0] ?? '';
      return `${quote}${slackText(line.slice(quote.length))}`;
    })
    .join('\n');
}

/**
 * An answer's parts of at most `limit` characters, each fitting one message once escaped. Escaping
 * makes a character up to five (`&amp;`) and a look-alike link's host note adds to that (under ten
 * characters per character in all), so text dense in them is split again at half the limit, down
 * to a limit whose parts fit whatever they hold (a few linear passes at most).
 */
export function slackAnswerParts(text: string, limit: number): string[] {
  let size = limit;
  let parts = splitMessage(text, { limit: size });
  while (size * 10 > slackMarkdownChars && parts.some((part) => slackMarkdown(part).length > slackMarkdownChars)) {
    size = Math.max(50, Math.floor(size / 2));
    parts = splitMessage(text, { limit: size });
  }
  return parts;
}
