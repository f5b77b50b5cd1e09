// HTTP helpers of the fake Discord's REST half: parsing bodies (JSON or the multipart/form-data
// discord.js sends with files) and the 404 Discord answers for unknown routes.

/** A REST reply: status and JSON body (none for 204). */
export type Reply = { status: number; body?: unknown };

/** Discord's answer to an unknown route. */
export function notFound(): Reply {
  return { status: 404, body: { message: '404: Not Found', code: 0 } };
}

/** JSON, or multipart/form-data with `payload_json` and `files[n]` parts. */
export function parseBody(contentType: string, raw: Buffer): { json: unknown; files: Array<{ name: string; content: string }> } {
  if (raw.length === 0) return { json: null, files: [] };
  if (contentType.startsWith('application/json')) return { json: JSON.parse(raw.toString('utf8')) as unknown, files: [] };
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  if (!boundary) return { json: null, files: [] };
  const text = raw.toString('utf8');
  let json: unknown = null;
  const files: Array<{ name: string; content: string }> = [];
  for (const part of text.split(`--${boundary[1] ?? boundary[2]}`)) {
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const headers = part.slice(0, split);
    const content = part.slice(split + 4).replace(/\r\n$/, '');
    const name = /name="([^"]+)"/.exec(headers)?.[1];
    const filename = /filename="([^"]+)"/.exec(headers)?.[1];
    if (name === 'payload_json') json = JSON.parse(content) as unknown;
    else if (filename) files.push({ name: filename, content });
  }
  return { json, files };
}
