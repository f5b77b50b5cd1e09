// Turns the configured tool groups into the worker's tool list and the definitions the model
// sees. Order is fixed (canonical group order, then each group's own order) so the tools part of
// the prompt is byte-identical across runs and restarts (prompt cache).
import { ConfigError } from '../core/errors.js';
import type { AnyTool } from '../core/tool.js';

/** Tool groups in the order their tools are listed; `memory` is always on. */
export const TOOL_GROUPS = ['memory', 'workspace', 'web', 'shell', 'mcp'] as const;

/** Name of a tool group. */
export type ToolGroup = (typeof TOOL_GROUPS)[number];

/** The Chat Completions `tools` entries for `tools`, in the given order (one implementation, in core). */
export { toolDefinitions } from '../core/tool.js';

/** Splits the TOOLS setting ("memory, web,shell") into trimmed, lower-case group names. */
export function parseToolGroups(setting: string): string[] {
  return setting
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}

/**
 * Builds the tools of the chosen groups in canonical order (memory, workspace, web, shell, mcp)
 * whatever order `groups` uses. `memory` is included whenever it has a factory (always on).
 * Unknown or unavailable groups and duplicate tool names are ConfigErrors.
 */
export function selectToolGroups(
  groups: readonly string[],
  factories: Partial<Record<string, () => AnyTool[]>>,
  /** Filled with each tool's group, when given (the approval policy selects by group). */
  groupOf?: Map<string, string>,
): AnyTool[] {
  const known = new Set<string>(TOOL_GROUPS);
  const unknown = groups.filter((group) => !known.has(group));
  if (unknown.length > 0) {
    throw new ConfigError(`TOOLS: unknown tool group${unknown.length > 1 ? 's' : ''} ${unknown.map((group) => `"${group}"`).join(', ')} (known: ${TOOL_GROUPS.join(', ')})`);
  }
  const chosen = new Set(groups);
  if (factories.memory) chosen.add('memory');
  const tools: AnyTool[] = [];
  const owners = new Map<string, string>();
  for (const group of TOOL_GROUPS) {
    if (!chosen.has(group)) continue;
    const factory = factories[group];
    if (!factory) throw new ConfigError(`TOOLS: tool group "${group}" is not available${group === 'mcp' ? ' (set MCP_CONFIG to a mcpServers JSON file)' : ''}`);
    for (const tool of factory()) {
      const owner = owners.get(tool.name);
      if (owner !== undefined) {
        throw new ConfigError(`TOOLS: tool name "${tool.name}" is defined twice (groups "${owner}" and "${group}")`);
      }
      owners.set(tool.name, group);
      groupOf?.set(tool.name, group);
      tools.push(tool);
    }
  }
  return tools;
}
