// scripts/purge-channel.ts: what a channel left behind goes, other channels keep theirs.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessionWorkspacePath } from '../../src/tools/workspace-path.js';
import { personMessage } from '../support/agent-harness.js';
import { startScript } from '../support/processes.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

describe('scripts/purge-channel.ts', () => {
  it('shows what it would delete, then deletes one channel\'s sessions, memory and workspaces', async () => {
    const harness = await bed.harness();
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-purge-'));
    const sessions: Record<string, string> = {};
    for (const channelId of ['CGONE', 'CKEEP']) {
      const address = { platform: 'slack' as const, workspaceId: 'TPURGE', channelId, threadKey: `${channelId}-1` };
      const { session } = await harness.agent.submit(personMessage(address, `hello from ${channelId}`), { startSession: true });
      await harness.waitForEvent('run-end', (event) => event.session.id === session!.id);
      await harness.stores.documents.write({ spaceId: session!.memorySpaceId, sessionKey: '', path: 'notes.md' }, `about ${channelId}`, { kind: 'system' });
      const workspace = sessionWorkspacePath(join(dataDir, 'workspaces'), session!.id);
      await mkdir(workspace, { recursive: true });
      await writeFile(join(workspace, 'draft.txt'), 'work in progress');
      sessions[channelId] = session!.id;
    }
    const env = { DATABASE_URL: bed.database.url, DATA_DIR: dataDir };
    const args = ['--platform', 'slack', '--workspace', 'TPURGE', '--channel', 'CGONE'];

    const dry = startScript('scripts/purge-channel.ts', env, args);
    expect((await dry.exited).code).toBe(0);
    expect(dry.lines[0]).toMatch(/^would delete 1 sessions \(\d+ context messages, 1 steer messages, 1 model calls, \d+ outbox items\), 1 memory spaces \([12] documents\) of slack TPURGE\/CGONE; run again with --yes to delete$/);
    expect(await bed.database.prisma.session.count({ where: { channelId: 'CGONE' } })).toBe(1);

    const purge = startScript('scripts/purge-channel.ts', env, [...args, '--yes']);
    expect((await purge.exited).code).toBe(0);
    expect(purge.lines[0]).toMatch(/^deleted 1 sessions .* and 1 session workspaces of slack TPURGE\/CGONE$/);
    const prisma = bed.database.prisma;
    expect(await prisma.session.count({ where: { channelId: 'CGONE' } })).toBe(0);
    expect(await prisma.steerMessage.count({ where: { sessionId: sessions['CGONE']! } })).toBe(0);
    expect(await prisma.modelCall.count({ where: { sessionId: sessions['CGONE']! } })).toBe(0);
    expect(await prisma.memorySpace.count({ where: { workspaceId: 'TPURGE', scopeKey: 'CGONE' } })).toBe(0);
    expect(existsSync(sessionWorkspacePath(join(dataDir, 'workspaces'), sessions['CGONE']!))).toBe(false);
    // The other channel is untouched.
    expect(await prisma.session.count({ where: { channelId: 'CKEEP' } })).toBe(1);
    expect(await prisma.memoryDocument.count({ where: { space: { scopeKey: 'CKEEP' } } })).toBeGreaterThan(0);
    expect(existsSync(sessionWorkspacePath(join(dataDir, 'workspaces'), sessions['CKEEP']!))).toBe(true);
  }, 60_000);

  it('names its arguments when one is missing', async () => {
    const run = startScript('scripts/purge-channel.ts', {}, ['--platform', 'slack']);
    expect((await run.exited).code).toBe(2);
    expect(run.stderr()).toMatch(/^usage: npx tsx scripts\/purge-channel\.ts --platform/);
  });
});
