// Reads the MCP server list: a JSON file in the common `{ "mcpServers": { … } }` format used by
// Claude Desktop, Cursor and others. A bad file is the operator's to fix, so every problem becomes
// a ConfigError naming the file and the exact entry.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from '../core/errors.js';

const stdioServerSchema = z.object({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
  disabled: z.boolean().optional(),
});

const httpServerSchema = z.object({
  type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).optional(),
  disabled: z.boolean().optional(),
});

/** A server started as a child process speaking MCP over stdio. */
export type StdioServerConfig = z.infer<typeof stdioServerSchema>;

/** A server reached over MCP Streamable HTTP. */
export type HttpServerConfig = z.infer<typeof httpServerSchema>;

/** One entry of `mcpServers`. */
export type McpServerConfig = StdioServerConfig | HttpServerConfig;

const fileSchema = z.object({ mcpServers: z.record(z.string(), z.unknown()) });

/** Reads and validates an `mcpServers` JSON file; servers with `"disabled": true` are left out. */
export async function readMcpConfig(configPath: string): Promise<Map<string, McpServerConfig>> {
  const problem = (detail: string): ConfigError => new ConfigError(`MCP_CONFIG: ${configPath}: ${detail}`);
  let text: string;
  try {
    text = await readFile(configPath, 'utf8');
  } catch (error) {
    throw problem(`cannot read the file (${error instanceof Error ? error.message : String(error)})`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw problem(`is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const file = fileSchema.safeParse(data);
  if (!file.success) throw problem(describeIssues(file.error, []));
  const servers = new Map<string, McpServerConfig>();
  for (const [name, entry] of Object.entries(file.data.mcpServers)) {
    if (name.trim() === '') throw problem('a server in mcpServers has an empty name');
    const where = ['mcpServers', name];
    // Pick the schema by shape first, so an error names the real mistake instead of "no union member matched".
    const isObject = typeof entry === 'object' && entry !== null;
    const schema = isObject && 'command' in entry ? stdioServerSchema : isObject && 'url' in entry ? httpServerSchema : undefined;
    if (schema === undefined) throw problem(`${where.join('.')} needs either "command" (stdio server) or "url" (HTTP server)`);
    const server = schema.safeParse(entry);
    if (!server.success) throw problem(describeIssues(server.error, where));
    if (server.data.disabled !== true) servers.set(name, server.data);
  }
  return servers;
}

function describeIssues(error: z.ZodError, prefix: readonly string[]): string {
  return error.issues
    .map((issue) => {
      const where = [...prefix, ...issue.path.map(String)].join('.');
      return where === '' ? issue.message : `${where}: ${issue.message}`;
    })
    .join('; ');
}
