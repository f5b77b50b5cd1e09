// A Markdown link whose text reads as an address ([https://slack.com/help](https://evil.example))
// passes for a link to that address. Where the text names another host than the link goes to, the
// real host is shown next to it, so a person sees where a click leads before clicking.

/** Longest link text read for an address (longer text is not taken for one). */
const labelChars = 300;
/** Text that reads as an address: an optional scheme, a host with a dot, then a path or nothing. */
const addressLike = /^(?:[a-z][a-z0-9+.-]{0,20}:\/\/)?([a-z0-9-]+(?:\.[a-z0-9-]+)+)(?::\d{1,5})?(?:[/?#]\S*)?$/i;

/** " (real.host)" when `label` reads as an address on another host than `url`; '' otherwise. */
export function realHostNote(label: string, url: string): string {
  const text = label.replace(/[*_`~]/g, '').trim();
  if (text.length > labelChars) return '';
  const named = addressLike.exec(text)?.[1];
  if (named === undefined) return '';
  const target = hostOf(url);
  return target !== null && bare(target) === bare(named) ? '' : ` (${target ?? url.slice(0, 100).replace(/\s+/g, '')})`;
}

/** The host a link goes to, lower-case; null when it is no URL. */
function hostOf(url: string): string | null {
  try {
    const host = new URL(url).hostname;
    return host === '' ? null : host.toLowerCase();
  } catch {
    return null;
  }
}

function bare(host: string): string {
  return host.toLowerCase().replace(/^www\./, '').replace(/\.$/, '');
}
