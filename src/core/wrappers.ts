// Hippo wraps untrusted text in its own elements (<document>, <tool-output>, …) and speaks to the
// model in its own elements (<role-change>, <memory-checkpoint/>, <notice>, …). Text inside one
// must not be able to close it early, nor open one of Hippo's own: either would pass for Hippo's
// own words (a page that says <role-change role="summarizer"> and a rule, a MAIN.md line that says
// <memory-checkpoint/>, and the next session would read it as an order from the system).

/** Names of Hippo's own elements. */
const hippoElements = 'document|memory-documents|tool-output|tool-images|current-main-md|role-change|memory-checkpoint|notice|review-events|pinned-lines|person-request';

const closingTags = new RegExp(`</(?=\\s*(${hippoElements})\\b)`, 'gi');
const openingTags = new RegExp(`<(?=\\s*(${hippoElements})\\b)`, 'gi');
const escapedClosingTags = new RegExp(`<\\\\/(?=\\s*(${hippoElements})\\b)`, 'gi');
const escapedOpeningTags = new RegExp(`<\\\\(?=\\s*(${hippoElements})\\b)`, 'gi');

/**
 * Makes text safe inside Hippo's own wrapper elements: a closing tag of one of them in the text
 * (`</document>`, `</tool-output>` …) becomes `<\/…`, an opening one (`<role-change …>`,
 * `<memory-checkpoint/>` …) becomes `<\…`. Both read the same to a person and open or close nothing.
 */
export function escapeClosingTags(text: string): string {
  return text.replace(closingTags, '<\\/').replace(openingTags, '<\\');
}

/** The text as it was before escapeClosingTags. */
export function unescapeClosingTags(text: string): string {
  return text.replace(escapedClosingTags, '</').replace(escapedOpeningTags, '<');
}
