// R23 in `npm run chat`: a shell command waits for `y` in the terminal; SIGKILLed while it waits
// (or after its approval was stored, before it ran), the next start asks with the same card or
// runs it, and the command has run exactly once.
import { readdir, readFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { startFakeModelServer, type FakeModelServer } from '../fakes/fake-model-server.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { scriptRoles } from '../support/model-script.js';
import { startScript, type RunningProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

let model: FakeModelServer;
const running: RunningProcess[] = [];
const databases: TestDatabase[] = [];

beforeAll(async () => {
  model = await startFakeModelServer();
});
afterEach(async () => {
  for (const chat of running.splice(0)) chat.kill('SIGKILL');
  model.reset();
  for (const database of databases.splice(0)) await database.drop();
});
afterAll(async () => {
  await model.close();
});

async function chatEnv(extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATA_DIR: await mkdtemp(join(tmpdir(), 'hippo-chat-approvals-')),
    OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: model.url, MODEL: 'test-model', MODEL_CONTEXT_WINDOW: '100000',
    // The command needs no sandbox to count its runs; where none works it runs without one.
    TOOLS: 'memory,shell', SHELL_UNSANDBOXED: 'true',
    // This DATA_DIR is left behind: no loop-mounted workspace disk with it (workspace-disks.test.ts has those).
    WORKSPACE_QUOTA: 'sampler',
    ...extra,
  };
}

function startChat(env: Record<string, string>): { chat: RunningProcess; output: () => string; type: (line: string) => void } {
  const chat = startScript('src/chat.ts', env);
  running.push(chat);
  return { chat, output: () => chat.lines.join('\n'), type: (line) => void chat.child.stdin?.write(`${line}\n`) };
}

async function waitForOutput(read: () => string, pattern: RegExp, timeoutMs = 45_000): Promise<void> {
  await until(() => pattern.test(read()), timeoutMs, `output matching ${pattern}:\n${read()}`);
}

/** How many times the command ran: the lines it appended to count.txt in the session's workspace. */
async function runs(dataDir: string): Promise<number> {
  const root = join(dataDir, 'workspaces');
  let lines = 0;
  for (const session of await readdir(root).catch(() => [] as string[])) {
    const text = await readFile(join(root, session, 'count.txt'), 'utf8').catch(() => '');
    lines += text.split('\n').filter(Boolean).length;
  }
  return lines;
}

const countOnce = { toolCalls: [{ id: 'c1', name: 'shell', arguments: { command: 'echo ran >> count.txt' } }] };

describe('approvals in the terminal chat (R23)', () => {
  it('asks again after a SIGKILL while the command waited, and `y` then runs it once', async () => {
    const env = await chatEnv({ LEASE_TTL_SECONDS: '600' });
    scriptRoles(model, { worker: [countOnce, { content: 'Counted.' }] });
    const first = startChat(env);
    await waitForOutput(first.output, /Commands: \/pause/);
    first.type('count once');
    await waitForOutput(first.output, /y: approve · a: approve shell for the rest of this run · n \[reason\]: deny/);
    expect(first.output()).toContain("✋ Hippo wants to run `shell` for");
    expect(first.output()).toContain('    │ echo ran >> count.txt');
    first.chat.kill('SIGKILL');
    await first.chat.exited;
    expect(await runs(env['DATA_DIR']!)).toBe(0);

    const second = startChat(env);
    await waitForOutput(second.output, /y: approve/);
    second.type('y');
    await waitForOutput(second.output, /hippo> Counted\./);
    expect(second.output()).toMatch(/✅ Approved by \S+ at \d\d:\d\d UTC\./);
    expect(await runs(env['DATA_DIR']!)).toBe(1);
    second.type('/quit');
    expect((await second.chat.exited).code).toBe(0);
  }, 150_000);

  it('runs a command approved while its process was down once, when a new process takes the session over', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const env = await chatEnv({ DATABASE_URL: database.url, LEASE_TTL_SECONDS: '2' });
    scriptRoles(model, { worker: [countOnce, { content: 'Counted after the crash.' }] });
    const first = startChat(env);
    await waitForOutput(first.output, /Commands: \/pause/);
    first.type('count once');
    await waitForOutput(first.output, /y: approve/);
    first.chat.kill('SIGKILL');
    await first.chat.exited;
    // The click was stored (on another replica, say) right as this process died, before the command ran.
    const stores = createPrismaStores(database.prisma);
    const [pending] = await database.prisma.toolApproval.findMany({ where: { status: 'pending' } });
    expect((await stores.approvals.decide(pending!.id, { status: 'approved', byId: 'bea', byName: 'Bea' })).decided).toBe(true);

    const second = startChat(env);
    await waitForOutput(second.output, /hippo> Counted after the crash\./, 60_000);
    expect(await runs(env['DATA_DIR']!)).toBe(1);
    second.type('/status');
    await waitForOutput(second.output, /approval: `shell` echo ran >> count\.txt .*✅ Approved by Bea/);
    second.type('/quit');
    expect((await second.chat.exited).code).toBe(0);
  }, 150_000);
});
