// The tool contract shared by every role (R1: one set of definitions; permissions by role at
// execution). Tools live in src/tools and src/core/memory/memory-tools.ts; core executes them.
import { z } from 'zod';
import type { AgentRole, ToolCall, ToolDefinition } from './messages.js';

/** An image a tool returned (MCP), to be shown to a model that accepts images. */
export interface ToolImage {
  mimeType: string;
  /** Base64 of the image bytes. */
  data: string;
}

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

/** What one call came to: the tool message content sent back to the model. */
export interface ToolOutcome {
  ok: boolean;
  content: string;
}

/**
 * The agent's tools as core runs them (loop/tool-executor.ts): by name, validated, permitted by
 * role, timed and capped; a failure is an outcome, never a throw.
 */
export interface ToolSet {
  /** The definitions every role receives, in a stable order (R1). */
  readonly definitions: ToolDefinition[];
  /** Runs one call; `resultLimitChars` narrows the cap to this call's share of its batch. */
  execute(call: ToolCall, context: Omit<ToolContext, 'signal'> & { signal: AbortSignal; resultLimitChars?: number }): Promise<ToolOutcome>;
  /** True when a successful call of `name` sends a workspace file with the next answer (Tool.deliversFile). */
  deliversFile(name: string): boolean;
  /** True when a call of `name` may run again after a crash interrupted it (Tool.repeatable). */
  isRepeatable(name: string): boolean;
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
