// A small MCP server over stdio whose one tool returns text dressed as a PNG (its signature, then
// text): an image a provider refuses (R22). Run it with `node --import tsx test/fakes/mcp-picture-server.ts`.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'mcp-pictures', version: '1.0.0' });

server.registerTool('fake_picture', { description: 'Returns text dressed as a PNG (its signature, then text).' }, async () => {
  const data = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('not an image at all')]).toString('base64');
  return { content: [{ type: 'image', mimeType: 'image/png', data }] };
});

await server.connect(new StdioServerTransport());
