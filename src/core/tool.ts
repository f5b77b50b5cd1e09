// The tool contract shared by every role (R1: one set of definitions; permissions by role at
// execution). Tools live in src/tools and src/core/memory/memory-tools.ts; core executes them.
import { z } from 'zod';
import type { ToolImage } from './loop/attachments.js';
import type { AgentRole, ToolDefinition } from './messages.js';

/** Who is calling a tool, and on behalf of which session. */
export interface ToolContext {
  role: AgentRole;
  sessionId: string;
  segmentId: string;
  memorySpaceId: string;
  /** The summarizer run making the call, when role is 'summarizer'. */
  memoryRunId?: string;
  /** Model context window in tokens (tools cap their output relative to it). */
  contextWindow: number;
  /** Aborted on timeout, pause-for-shutdown or cancellation; tools must stop when it fires. */
  signal: AbortSignal;
  /**
   * Present when the model is shown images: a tool that got an image (MCP) hands it over here
   * and it is shown after the batch's results; false when it is too large to show.
   */
  addImage?: (image: ToolImage) => boolean;
}

/** A tool the model can call. `input` validates the parsed JSON arguments. */
export interface Tool<Input = unknown> {
  name: string;
  description: string;
  input: z.ZodType<Input>;
  /** Per-call time limit in milliseconds (default: the executor's). */
  timeoutMs?: number;
  /** Roles allowed to run it (default: the worker only). Every role sees every definition (R1). */
  roles?: readonly AgentRole[];
  /**
   * Safe to run again when a crash interrupted it (no side effect, bounded work). Otherwise a call
   * that had started when the process died is answered "interrupted" instead of run again: it may
   * be what crashed the process, or have done its effect already (default false).
   */
  repeatable?: boolean;
  /**
   * Its output carries outside content (pages, files, commands, other services, earlier chat):
   * wrapped in a <tool-output trust="untrusted"> element before it enters the context.
   */
  untrustedOutput?: boolean;
  /**
   * A successful call sends the workspace file its `path` argument names with the next answer
   * (attach_file): the chat adapter uploads it after the answer's text.
   */
  deliversFile?: boolean;
  /** Changes nothing anywhere (reads only): R23's approval policy never asks for it by group. */
  readOnly?: boolean;
  /**
   * An MCP server's tool: the server's name in MCP_CONFIG, the tool's own name there, and what the
   * server says of it (MCP tool annotations; hints, not guarantees). The approval policy reads them.
   */
  mcp?: { server: string; tool: string; readOnlyHint?: boolean; destructiveHint?: boolean };
  /** JSON Schema to show the model instead of the one derived from `input` (MCP tools). */
  parameters?: Record<string, unknown>;
  /** Returns the result text; throw ToolError (or anything) to report a failure to the model. */
  execute(input: Input, context: ToolContext): Promise<string>;
}

/** Erases the input type so tools of different inputs fit one list. */
export type AnyTool = Tool<unknown>;

/** Helper that keeps the input type while declaring a tool. */
export function defineTool<Input>(tool: Tool<Input>): Tool<Input> {
  return tool;
}

/** The definitions the model sees, in the given (stable) order; the prompt cache depends on it. */
export function toolDefinitions(tools: readonly AnyTool[]): ToolDefinition[] {
  return tools.map((tool) => {
    const parameters = tool.parameters ?? (z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>);
    const { $schema: _schema, ...rest } = parameters;
    return { type: 'function', function: { name: tool.name, description: tool.description, parameters: rest } };
  });
}
