// Hippo wraps untrusted text in its own elements (<document>, <tool-output>, …): the text inside
// one must not be able to close it early and pass for Hippo's own words.

/** Closing tags of Hippo's own elements, whatever their case or spacing. */
const wrapperTags = /<\/(?=\s*(document|memory-documents|tool-output|current-main-md|role-change)\b)/gi;
const escapedWrapperTags = /<\\\/(?=\s*(document|memory-documents|tool-output|current-main-md|role-change)\b)/gi;

/**
 * Makes text safe inside Hippo's own wrapper elements: a closing tag of one of them in the text
 * (`</document>`, `</tool-output>` …) becomes `<\/…`, which reads the same to a person and closes nothing.
 */
export function escapeClosingTags(text: string): string {
  return text.replace(wrapperTags, '<\\/');
}

/** The text as it was before escapeClosingTags. */
export function unescapeClosingTags(text: string): string {
  return text.replace(escapedWrapperTags, '</');
}
