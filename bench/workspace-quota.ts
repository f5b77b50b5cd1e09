// The workspace quota against a shell command that writes as fast as it can (docs/security.md
// "Workspace disks"): 50 MiB into a 5 MiB workspace, sampled (every 250 ms, the fallback) and on
// a disk of the quota's size; and what a disk costs (first use, a use in the same process, a
// restart finding the mount, a restart after a reboot, removal). Root with loop devices and
// bubblewrap (or unshare) only. Prints the figures with the machine; not in `bench/run.ts`.
//   npx tsx bench/workspace-quota.ts        (BENCH_QUOTA_RUNS=5)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AnyTool } from '../src/core/tool.js';
import { shellTools } from '../src/tools/shell.js';
import { detectShellSandbox } from '../src/tools/shell-sandbox.js';
import { WorkspaceDisks } from '../src/tools/workspace-disks.js';
import { sessionWorkspacePath } from '../src/tools/workspace-path.js';
import { runEnvironment } from './support/report.js';
import { envNumber } from './support/stats.js';

const MiB = 1024 * 1024;
const runs = envNumber('BENCH_QUOTA_RUNS', 5);
const base = await mkdtemp(path.join(tmpdir(), 'hippo-bench-quota-'));
await chmod(base, 0o755);
const root = path.join(base, 'workspaces');
const images = path.join(base, 'workspace-disks');
const silent = { warn: () => undefined, info: () => undefined };

try {
  const sandbox = await detectShellSandbox({ root, allowUnsandboxed: false });
  const limits = { maxBytes: 5 * MiB, maxFiles: 2_000, maxFileBytes: 16 * MiB };
  const context = (sessionId: string) => ({ role: 'worker' as const, sessionId, segmentId: 'g', memorySpaceId: 'm', contextWindow: 128_000, signal: new AbortController().signal });

  // 50 files of 1 MiB (one file stops at the quota anyway: RLIMIT_FSIZE). They exist before the
  // command, so the sampler's clean-up (which removes what a command created) keeps them: their
  // sizes are what got onto the disk before the kill.
  const flood = async (label: string, disks: WorkspaceDisks, run: number): Promise<string> => {
    const sessionId = `${label}-${run}`;
    const workspace = sessionWorkspacePath(root, sessionId);
    await disks.ensure(workspace);
    for (let part = 1; part <= 50; part += 1) await writeFile(path.join(workspace, `part-${part}.bin`), '');
    const [tool] = shellTools({ root, env: { PATH: process.env['PATH'], HOME: base }, sandbox, limits, disks }) as [AnyTool];
    const started = performance.now();
    const result = await tool.execute(tool.input.parse({ command: 'for n in $(seq 50); do head -c 1048576 /dev/zero >> part-$n.bin; done 2>/dev/null' }), context(sessionId));
    const ms = performance.now() - started;
    let written = 0;
    for (const name of await readdir(workspace)) written += (await stat(path.join(workspace, name))).size;
    const image = await stat(disks.imageOf(workspace)).catch(() => undefined);
    const ending = result.split('\n')[0] ?? '';
    return `| ${label} | ${run} | ${(written / MiB).toFixed(1)} | ${image ? ((image.blocks * 512) / MiB).toFixed(2) : '–'} | ${ms.toFixed(0)} | ${ending}${result.includes('workspace full') ? ' · workspace full' : ''} |`;
  };

  console.log('| quota kept by | run | MiB in the 5 MiB workspace after the command | image blocks on the host, MiB | command ms | what the model read |');
  console.log('| --- | ---: | ---: | ---: | ---: | --- |');
  for (let run = 1; run <= runs; run += 1) {
    console.log(await flood('sampler', new WorkspaceDisks({ root, images, limits, enabled: false, log: silent }), run));
    console.log(await flood('disk', new WorkspaceDisks({ root, images, limits, enabled: true, log: silent }), run));
  }

  const median = (samples: number[]): string => `${[...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!.toFixed(1)}`;
  const time = async (work: () => Promise<unknown>): Promise<number> => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  console.log('\n| disk of | first use (create, mkfs, mount) ms | same process again ms | restart, mount found ms | restart after reboot (fsck, mount) ms | removal ms |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const quota of [5, 100, 1024]) {
    const sized = { ...limits, maxBytes: quota * MiB };
    const columns: number[][] = [[], [], [], [], []];
    for (let run = 1; run <= runs; run += 1) {
      const workspace = sessionWorkspacePath(root, `cost-${quota}-${run}`);
      const disks = new WorkspaceDisks({ root, images, limits: sized, enabled: true, log: silent });
      columns[0]!.push(await time(() => disks.ensure(workspace)));
      columns[1]!.push(await time(() => disks.ensure(workspace)));
      columns[2]!.push(await time(() => new WorkspaceDisks({ root, images, limits: sized, enabled: true, log: silent }).ensure(workspace)));
      execFileSync('umount', [workspace]);
      const rebooted = new WorkspaceDisks({ root, images, limits: sized, enabled: true, log: silent });
      columns[3]!.push(await time(() => rebooted.ensure(workspace)));
      columns[4]!.push(await time(() => rebooted.remove(workspace)));
    }
    console.log(`| ${quota} MiB | ${columns.map(median).join(' | ')} |`);
  }
  console.log(`\nmedians of ${runs} runs`);
  console.log(JSON.stringify(runEnvironment()));
} finally {
  for (const target of readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1] ?? '').filter((target) => target.startsWith(base))) {
    try {
      execFileSync('umount', ['-l', target]);
    } catch {
      // Gone already.
    }
  }
  await rm(base, { recursive: true, force: true });
}
