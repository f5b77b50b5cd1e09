// R23: which tool calls wait for a person. Resolved once at start-up from APPROVAL_REQUIRED and
// APPROVAL_EXEMPT into the set of tool names that ask; the tools array the model sees is the same
// either way (R1). Selectors, in both settings:
//   <group>               every tool of a group (shell, web, workspace, mcp) that is not read-only
//   mcp:<server>          the tools of one MCP server that it does not mark read-only
//   mcp:<server>/<tool>   one MCP tool, read-only or not
//   <tool name>           one tool, e.g. write_file or github__create_issue
//   none                  nothing (APPROVAL_REQUIRED=none turns approvals off)
// A tool asks when a REQUIRED selector matches it and no EXEMPT one does. Memory tools never ask
// (the worker's TODO.md and memory reads, and the forks, which run no tool of another group).
import { ConfigError } from './errors.js';
import type { AnyTool } from './tool.js';

/** The default of APPROVAL_REQUIRED: shell commands and MCP tools their server does not mark read-only. */
/** R23's settings (APPROVAL_*); absent from AgentDeps: nothing asks. */
export interface ApprovalSettings {
  policy: ApprovalPolicy;
  /** How long a person has to decide before the call is denied with a note (ms). */
  timeoutMs: number;
  /** How often a waiting drive looks at its approval besides wake-ups, which can be missed (ms). */
  pollMs: number;
}

export const defaultApprovalRequired = 'shell,mcp';

/** R23's settings (APPROVAL_*); absent from AgentDeps: nothing asks. */
export interface ApprovalSettings {
  policy: ApprovalPolicy;
  /** How long a person has to decide before the call is denied with a note (ms). */
  timeoutMs: number;
  /** How often a waiting drive looks at its approval besides wake-ups, which can be missed (ms). */
  pollMs: number;
}

/** Which tool names wait for a person. */
export class ApprovalPolicy {
  constructor(
    private readonly asking: ReadonlySet<string>,
    /** MCP tools their server does not say are harmless (destructiveHint absent or true, not read-only): the card says so. */
    private readonly destructiveTools: ReadonlySet<string> = new Set(),
  ) {}

  /** Nothing asks (tests, APPROVAL_REQUIRED=none). */
  static readonly none = new ApprovalPolicy(new Set());

  /** True when a call of `tool` waits for a person before it runs. */
  needs(tool: string): boolean {
    return this.asking.has(tool);
  }

  /** True when `tool`'s MCP server marks it (or leaves it) destructive. */
  destructive(tool: string): boolean {
    return this.destructiveTools.has(tool);
  }

  /** The tools that ask, sorted (logged at start-up). */
  get tools(): string[] {
    return [...this.asking].sort();
  }
}

/** A tool as the policy sees it: its name, its group, and what it says of itself. */
export interface PolicyTool {
  tool: Pick<AnyTool, 'name' | 'readOnly' | 'mcp'>;
  group: string;
}

/**
 * Resolves the two settings against the tools that exist. A selector naming no group and no tool
 * is a ConfigError naming the variable; `mcp:` selectors are not checked (a server that failed to
 * start has no tools, and must not stop start-up).
 */
export function resolveApprovalPolicy(tools: readonly PolicyTool[], required: string, exempt: string): ApprovalPolicy {
  const requiredSelectors = parseSelectors('APPROVAL_REQUIRED', required, tools);
  const exemptSelectors = parseSelectors('APPROVAL_EXEMPT', exempt, tools);
  const asking = new Set<string>();
  const destructive = new Set<string>();
  for (const entry of tools) {
    // MCP's default for a tool that is not read-only is destructive, unless it says otherwise.
    if (entry.tool.mcp && !isReadOnly(entry.tool) && entry.tool.mcp.destructiveHint !== false) destructive.add(entry.tool.name);
    if (entry.group === 'memory') continue;
    if (requiredSelectors.some((selector) => matches(selector, entry, false)) && !exemptSelectors.some((selector) => matches(selector, entry, true))) asking.add(entry.tool.name);
  }
  return new ApprovalPolicy(asking, destructive);
}

/** True when the tool changes nothing: marked so here, or by its MCP server (and not also as destructive). */
export function isReadOnly(tool: Pick<AnyTool, 'readOnly' | 'mcp'>): boolean {
  if (tool.readOnly === true) return true;
  return tool.mcp?.readOnlyHint === true && tool.mcp.destructiveHint !== true;
}

type Selector = { kind: 'group' | 'name'; value: string } | { kind: 'server'; server: string } | { kind: 'mcp-tool'; server: string; tool: string };

const groups = new Set(['workspace', 'web', 'shell', 'mcp', 'memory']);

function parseSelectors(variable: string, setting: string, tools: readonly PolicyTool[]): Selector[] {
  const words = setting.split(',').map((word) => word.trim()).filter((word) => word !== '');
  if (words.length === 1 && words[0]?.toLowerCase() === 'none') return [];
  const names = new Set(tools.map((entry) => entry.tool.name));
  return words.map((word): Selector => {
    if (word.toLowerCase().startsWith('mcp:')) {
      const rest = word.slice(4);
      const slash = rest.indexOf('/');
      if (rest === '' || slash === 0 || slash === rest.length - 1) throw new ConfigError(`${variable}: "${word}" is not mcp:<server> or mcp:<server>/<tool>`);
      return slash < 0 ? { kind: 'server', server: rest } : { kind: 'mcp-tool', server: rest.slice(0, slash), tool: rest.slice(slash + 1) };
    }
    if (groups.has(word.toLowerCase())) return { kind: 'group', value: word.toLowerCase() };
    if (names.has(word)) return { kind: 'name', value: word };
    throw new ConfigError(`${variable}: "${word}" is neither a tool group (${[...groups].join(', ')}), mcp:<server>[/<tool>], none, nor a tool that is on (${[...names].join(', ')})`);
  });
}

/** An exempting selector also matches read-only tools (exempting them changes nothing). */
function matches(selector: Selector, entry: PolicyTool, exempting: boolean): boolean {
  const { tool } = entry;
  const writes = exempting || !isReadOnly(tool);
  switch (selector.kind) {
    case 'group':
      return entry.group === selector.value && writes;
    case 'name':
      return tool.name === selector.value;
    case 'server':
      return tool.mcp?.server === selector.server && writes;
    case 'mcp-tool':
      return tool.mcp?.server === selector.server && tool.mcp.tool === selector.tool;
  }
}
