// The `mcp` tool group: tools of the MCP servers listed in MCP_CONFIG. The tool list is taken
// once at start-up and never changes afterwards (prompt cache); a server that dies is restarted
// on the next call to one of its tools, keeping its original tool definitions.
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CancelledError, ToolError } from '../core/errors.js';
import type { AnyTool, ToolContext } from '../core/tool.js';
import type { Logger } from '../log.js';
import { abortReason } from './abort-reason.js';
import { readMcpConfig, type McpServerConfig } from './mcp-config.js';
import { capHeadTail, resultBudgetChars } from '../core/output-cap.js';
import { formatSize } from '../core/format-size.js';

/** Options of McpToolSource.start. */
export interface McpToolSourceOptions {
  /** Path of the `mcpServers` JSON file (MCP_CONFIG). */
  configPath: string;
  log: Pick<Logger, 'error' | 'warn' | 'info' | 'debug'>;
  /** Time limit for each tool call, in milliseconds (default 60,000). */
  callTimeoutMs?: number;
  /** Time limit for connecting a server and listing its tools, in milliseconds (default 60,000). */
  startTimeoutMs?: number;
}

/** Health of one configured server, for readiness checks and logs. */
export interface McpServerStatus {
  name: string;
  state: 'running' | 'dead' | 'closed';
  /** Process id of a running stdio server. */
  pid?: number;
  tools: number;
}

/** Default time limit for an MCP tool call, in milliseconds. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

/** Default time limit for starting an MCP server (connect and list tools), in milliseconds. */
export const DEFAULT_MCP_START_TIMEOUT_MS = 60_000;

/** Longest tool name the model APIs accept. */
const MAX_TOOL_NAME = 64;

interface Connection {
  client: Client;
  transport: StdioClientTransport | StreamableHTTPClientTransport;
}

interface Server {
  name: string;
  config: McpServerConfig;
  /** Tool definitions from the first successful listing; kept across restarts. */
  tools: McpTool[];
  connection: Connection | undefined;
  restarting: Promise<Connection> | undefined;
}

/** Connects the configured MCP servers and exposes their tools as `<server>__<tool>`. */
export class McpToolSource {
  private closed = false;
  private readonly toolList: AnyTool[] = [];

  private constructor(
    private readonly servers: Server[],
    private readonly log: McpToolSourceOptions['log'],
    private readonly callTimeoutMs: number,
    private readonly startTimeoutMs: number,
  ) {
    const used = new Set<string>();
    for (const server of servers) {
      for (const tool of server.tools) this.toolList.push(this.wrap(server, tool, used));
    }
  }

  /** Reads the config (ConfigError if invalid) and starts every server; one that fails is logged and skipped. */
  static async start(options: McpToolSourceOptions): Promise<McpToolSource> {
    const configs = await readMcpConfig(options.configPath);
    const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_MCP_START_TIMEOUT_MS;
    const started = await Promise.all(
      [...configs].map(async ([name, config]): Promise<Server | undefined> => {
        try {
          const { connection, tools } = await connect(name, config, startTimeoutMs, options.log);
          options.log.info({ server: name, tools: tools.length }, 'mcp-server-start');
          const server: Server = { name, config, tools, connection, restarting: undefined };
          return server;
        } catch (error) {
          options.log.error({ server: name, error: errorMessage(error) }, 'mcp-server-start-failed');
          return undefined;
        }
      }),
    );
    const servers = started.filter((server): server is Server => server !== undefined);
    const source = new McpToolSource(servers, options.log, options.callTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS, startTimeoutMs);
    for (const server of servers) if (server.connection) source.watch(server, server.connection);
    return source;
  }

  /** The tools of all servers that started, in config order; the same list for the process lifetime. */
  tools(): AnyTool[] {
    return [...this.toolList];
  }

  /** State of each server that started. */
  status(): McpServerStatus[] {
    return this.servers.map((server) => {
      const state = this.closed ? 'closed' : server.connection ? 'running' : 'dead';
      const pid = server.connection?.transport instanceof StdioClientTransport ? server.connection.transport.pid : null;
      return pid === null || pid === undefined ? { name: server.name, state, tools: server.tools.length } : { name: server.name, state, pid, tools: server.tools.length };
    });
  }

  /** Shuts every server down; later calls fail with a ToolError. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.servers.map(async (server) => {
        const connection = server.connection ?? (await server.restarting?.catch(() => undefined));
        server.connection = undefined;
        await connection?.client.close().catch(() => undefined);
      }),
    );
  }

  private wrap(server: Server, tool: McpTool, used: Set<string>): AnyTool {
    const name = toolName(server.name, tool.name, used);
    const { $schema: _ignored, ...parameters } = tool.inputSchema;
    return {
      name,
      description: tool.description ?? tool.title ?? `Tool "${tool.name}" of the MCP server "${server.name}"`,
      // The server validates arguments against its own schema; this only ensures an object.
      input: z.record(z.string(), z.unknown()),
      parameters,
      timeoutMs: this.callTimeoutMs + 5_000,
      // Another service's words: data, and never called twice after a crash (its effect is unknown).
      untrustedOutput: true,
      mcp: {
        server: server.name, tool: tool.name,
        ...(tool.annotations?.readOnlyHint === undefined ? {} : { readOnlyHint: tool.annotations.readOnlyHint }),
        ...(tool.annotations?.destructiveHint === undefined ? {} : { destructiveHint: tool.annotations.destructiveHint }),
      },
      execute: (input, context) => this.call(server, tool.name, input as Record<string, unknown>, context),
    };
  }

  private async call(server: Server, tool: string, args: Record<string, unknown>, context: ToolContext): Promise<string> {
    if (this.closed) throw new ToolError(`MCP server "${server.name}" is shut down`);
    let connection = server.connection;
    if (!connection) {
      try {
        // The restart goes on if this call is cancelled: the next call then finds it done.
        connection = await untilAborted(this.restart(server), context.signal);
      } catch (error) {
        if (context.signal.aborted) throw new CancelledError(abortReason(context.signal));
        throw new ToolError(`MCP server "${server.name}" is not running and could not be restarted: ${errorMessage(error)}`, { cause: error });
      }
    }
    let result: Awaited<ReturnType<Client['callTool']>>;
    try {
      result = await connection.client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.callTimeoutMs, signal: context.signal });
    } catch (error) {
      if (context.signal.aborted) throw new CancelledError(abortReason(context.signal));
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new ToolError(`${tool} on MCP server "${server.name}" timed out after ${this.callTimeoutMs / 1000} s`, { cause: error });
      }
      // Protocol errors come from a live server; anything else means the connection is gone.
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
        throw new ToolError(`${tool} on MCP server "${server.name}" failed: ${error.message}`, { cause: error });
      }
      this.markDead(server, connection, errorMessage(error));
      throw new ToolError(`MCP server "${server.name}" stopped during the call (${errorMessage(error)}); it will be restarted on the next call`, { cause: error });
    }
    return formatResult(result as CallToolResult, resultBudgetChars(context.contextWindow), context);
  }

  /** Reconnects a dead server (once, however many calls wait) and relists its tools. */
  private restart(server: Server): Promise<Connection> {
    server.restarting ??= (async () => {
      try {
        const { connection, tools } = await connect(server.name, server.config, this.startTimeoutMs, this.log);
        if (this.closed) {
          await connection.client.close().catch(() => undefined);
          throw new Error('shut down during restart');
        }
        if (JSON.stringify(tools) !== JSON.stringify(server.tools)) {
          // The model was promised the original list; it stays, and calls go to the server as named.
          this.log.warn({ server: server.name }, 'mcp-server-tools-changed');
        }
        server.connection = connection;
        this.watch(server, connection);
        this.log.info({ server: server.name }, 'mcp-server-restart');
        return connection;
      } finally {
        server.restarting = undefined;
      }
    })();
    return server.restarting;
  }

  private watch(server: Server, connection: Connection): void {
    connection.client.onclose = () => this.markDead(server, connection, 'connection closed');
  }

  private markDead(server: Server, connection: Connection, reason: string): void {
    // Events of an old connection must not touch its replacement.
    if (server.connection !== connection) return;
    server.connection = undefined;
    if (!this.closed) this.log.warn({ server: server.name, reason }, 'mcp-server-dead');
    // A hung process is stopped too, so the restart does not leave it behind.
    void connection.client.close().catch(() => undefined);
  }
}

/** Connects one server and lists its tools (all pages). */
async function connect(
  name: string,
  config: McpServerConfig,
  timeoutMs: number,
  log: McpToolSourceOptions['log'],
): Promise<{ connection: Connection; tools: McpTool[] }> {
  let transport: StdioClientTransport | StreamableHTTPClientTransport;
  if ('command' in config) {
    const parameters: StdioServerParameters = { command: config.command, stderr: 'pipe' };
    if (config.args) parameters.args = config.args;
    if (config.env) parameters.env = config.env;
    if (config.cwd) parameters.cwd = config.cwd;
    const stdio = new StdioClientTransport(parameters);
    // Server diagnostics go to our log, not to the bot's own stderr.
    stdio.stderr?.on('data', (chunk: Buffer) => log.debug({ server: name, stderr: chunk.toString('utf8').slice(0, 2000) }, 'mcp-server-stderr'));
    transport = stdio;
  } else {
    transport = new StreamableHTTPClientTransport(new URL(config.url), config.headers ? { requestInit: { headers: config.headers } } : undefined);
  }
  const client = new Client({ name: 'hippo', version: '0.1.0' });
  client.onerror = (error) => log.debug({ server: name, error: error.message }, 'mcp-server-error');
  try {
    await client.connect(transport, { timeout: timeoutMs });
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return { connection: { client, transport }, tools };
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}

/** `<server>__<tool>` limited to [a-zA-Z0-9_-] and 64 characters, made unique with a short hash. */
export function toolName(server: string, tool: string, used: Set<string>): string {
  const full = `${server}__${tool}`;
  let name = full.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (name.length > MAX_TOOL_NAME || used.has(name)) {
    const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
    name = `${name.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
  }
  used.add(name);
  return name;
}

/**
 * Text of a tool result; an `isError` result becomes a ToolError with that text. Images go to the
 * model as images when it accepts them (shown after the batch's results), else are described.
 */
function formatResult(result: CallToolResult, budget: number, context: Pick<ToolContext, 'addImage'>): string {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item.type === 'text') parts.push(item.text);
    else if (item.type === 'image') {
      const shown = context.addImage?.({ mimeType: item.mimeType, data: item.data }) ?? false;
      parts.push(`[image ${item.mimeType}, ${formatSize(Buffer.byteLength(item.data, 'base64'))}, ${shown ? 'shown after the tool results' : 'not shown'}]`);
    } else if (item.type === 'audio') parts.push(`[audio ${item.mimeType}, not shown]`);
    else if (item.type === 'resource') parts.push('text' in item.resource ? item.resource.text : `[resource ${item.resource.uri}]`);
    else if (item.type === 'resource_link') parts.push(`[resource link ${item.name}: ${item.uri}]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  const text = parts.join('\n');
  if (result.isError === true) throw new ToolError(text === '' ? 'the tool reported an error' : text);
  return text === '' ? '(no output)' : capHeadTail(text, budget, 'tool output');
}

/** Settles like `promise`, or rejects as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new CancelledError(abortReason(signal)));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new CancelledError(abortReason(signal)));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
