// Stands in for the bot process in shell sandbox tests: it holds secrets in its real environment
// (what /proc/<pid>/environ shows), runs the shell tool with process.env as the service does, and
// prints each command's result as one JSON line. Arguments: root, sandbox kind, commands…
import { shellTools } from '../../src/tools/shell.js';
import { detectShellSandbox, type SandboxKind } from '../../src/tools/shell-sandbox.js';
import type { AnyTool } from '../../src/core/tool.js';

const [root = '', kind = 'bwrap', ...commands] = process.argv.slice(2);
const sandbox = await detectShellSandbox({ root, allowUnsandboxed: kind === 'none', only: kind as SandboxKind });
const [tool] = shellTools({ root, env: process.env, sandbox, timeoutMs: 5_000 }) as [AnyTool];
for (const command of commands) {
  const result = await tool
    .execute(tool.input.parse({ command }), { role: 'worker', sessionId: 's1', segmentId: 'g1', memorySpaceId: 'm1', contextWindow: 128_000, signal: new AbortController().signal })
    .catch((error: unknown) => `tool error: ${String(error)}`);
  process.stdout.write(`${JSON.stringify({ command, result })}\n`);
}
