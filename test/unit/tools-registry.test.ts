import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../src/core/errors.js';
import { defineTool, type AnyTool } from '../../src/core/tool.js';
import { parseToolGroups, selectToolGroups, toolDefinitions } from '../../src/tools/registry.js';

const tool = (name: string): AnyTool =>
  defineTool({ name, description: `${name} tool`, input: z.object({}), execute: async () => name });

const factories = {
  memory: () => [tool('read_document')],
  workspace: () => [tool('read_file'), tool('write_file')],
  web: () => [tool('web_fetch')],
  shell: () => [tool('shell')],
  mcp: () => [tool('echo__echo')],
};

describe('toolDefinitions', () => {
  it('derives the JSON Schema from the zod input, without $schema, in the given order', () => {
    const search = defineTool({
      name: 'search',
      description: 'Search earlier segments.',
      input: z.object({ query: z.string().describe('What to look for'), limit: z.number().int().min(1).max(50).default(10) }),
      execute: async () => '',
    });
    const definitions = toolDefinitions([search, tool('zeta'), tool('alpha')]);
    expect(definitions.map((definition) => definition.function.name)).toEqual(['search', 'zeta', 'alpha']);
    expect(definitions[0]).toEqual({
      type: 'function',
      function: {
        name: 'search',
        description: 'Search earlier segments.',
        parameters: {
          type: 'object',
          properties: {
            query: { type: 'string', description: 'What to look for' },
            limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
          },
          // A field with a default is optional for the model.
          required: ['query'],
        },
      },
    });
  });

  it('uses a tool’s own JSON Schema when it brings one', () => {
    const parameters = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const mcpTool: AnyTool = { ...tool('files__read'), input: z.record(z.string(), z.unknown()), parameters: { $schema: 'http://json-schema.org/draft-07/schema#', ...parameters } };
    expect(toolDefinitions([mcpTool])[0]?.function.parameters).toEqual(parameters);
  });

  it('produces byte-identical definitions on every call (prompt cache)', () => {
    const tools = selectToolGroups(['web', 'workspace'], factories);
    expect(JSON.stringify(toolDefinitions(tools))).toBe(JSON.stringify(toolDefinitions(selectToolGroups(['workspace', 'web'], factories))));
  });
});

describe('selectToolGroups', () => {
  it('builds groups in canonical order whatever the order in TOOLS', () => {
    const tools = selectToolGroups(['mcp', 'shell', 'web', 'workspace', 'memory'], factories);
    expect(tools.map((entry) => entry.name)).toEqual(['read_document', 'read_file', 'write_file', 'web_fetch', 'shell', 'echo__echo']);
  });

  it('always includes memory', () => {
    expect(selectToolGroups(['web'], factories).map((entry) => entry.name)).toEqual(['read_document', 'web_fetch']);
  });

  it('builds only the chosen groups', () => {
    let built = 0;
    selectToolGroups(['web'], { ...factories, shell: () => (built += 1, []) });
    expect(built).toBe(0);
  });

  it('rejects unknown group names with a ConfigError', () => {
    expect(() => selectToolGroups(['web', 'browser'], factories)).toThrow(ConfigError);
    expect(() => selectToolGroups(['web', 'browser'], factories)).toThrow('TOOLS: unknown tool group "browser" (known: memory, workspace, web, shell, mcp)');
  });

  it('rejects a chosen group that is not available', () => {
    const { mcp: _mcp, ...withoutMcp } = factories;
    expect(() => selectToolGroups(['mcp'], withoutMcp)).toThrow('tool group "mcp" is not available (set MCP_CONFIG');
  });

  it('rejects duplicate tool names', () => {
    expect(() => selectToolGroups(['workspace', 'mcp'], { ...factories, mcp: () => [tool('read_file')] })).toThrow(
      new ConfigError('TOOLS: tool name "read_file" is defined twice (groups "workspace" and "mcp")'),
    );
  });
});

describe('parseToolGroups', () => {
  it('splits, trims and lower-cases the TOOLS setting', () => {
    expect(parseToolGroups(' Memory, web,,shell ')).toEqual(['memory', 'web', 'shell']);
  });
});
