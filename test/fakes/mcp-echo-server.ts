// A small MCP server over stdio for tests, built with the real SDK. Run it with
// `node --import tsx test/fakes/mcp-echo-server.ts`. MCP_ECHO_CRASH_ON_CALL=N makes the process
// exit in the middle of its N-th tool call (counted per process).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const crashOnCall = Number(process.env.MCP_ECHO_CRASH_ON_CALL ?? '0');
let calls = 0;

/** Counts a call and exits the process, without answering, when it is the configured one. */
function countCall(): void {
  calls += 1;
  if (crashOnCall > 0 && calls === crashOnCall) process.exit(3);
}

const server = new McpServer({ name: 'mcp-echo', version: '1.0.0' });

server.registerTool(
  'echo',
  { description: 'Returns the given text unchanged.', inputSchema: { text: z.string().describe('Text to echo') } },
  async ({ text }) => {
    countCall();
    return { content: [{ type: 'text', text }] };
  },
);

server.registerTool(
  'add',
  { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } },
  async ({ a, b }) => {
    countCall();
    return { content: [{ type: 'text', text: String(a + b) }] };
  },
);

server.registerTool('pid', { description: 'Returns the server process id.' }, async () => {
  countCall();
  return { content: [{ type: 'text', text: String(process.pid) }] };
});

server.registerTool(
  'sleep',
  { description: 'Waits the given number of milliseconds, then answers.', inputSchema: { ms: z.number().int().min(0) } },
  async ({ ms }) => {
    countCall();
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
  },
);

server.registerTool('fail', { description: 'Always reports a tool error.' }, async () => {
  countCall();
  return { content: [{ type: 'text', text: 'this tool always fails' }], isError: true };
});

/** A 1×1 PNG. */
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

server.registerTool('picture', { description: 'Returns a caption and a tiny PNG image.' }, async () => {
  countCall();
  return { content: [{ type: 'text', text: 'a red dot' }, { type: 'image', mimeType: 'image/png', data: png }] };
});

server.registerTool('crash', { description: 'Exits the server process in the middle of the call.' }, async () => {
  process.exit(3);
});

await server.connect(new StdioServerTransport());
