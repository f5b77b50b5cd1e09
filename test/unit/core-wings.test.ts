// src/core stands in wings, one above the other (docs/architecture.md, "Core's wings"): a file
// imports files of its own wing or of a wing below, never above, and no files import each other in
// a circle. Read from the source, as the boundary tests in config.test.ts read it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * From the top down. The ground is the files directly in src/core (but agent.ts, core's face) and
 * the storage ports of store/, which store.ts gathers.
 */
const wings: ReadonlyArray<readonly string[]> = [['agent.ts'], ['runner'], ['memory'], ['loop'], ['prompts'], ['', 'store']];

function wingOf(file: string): number {
  const folder = file.includes('/') ? file.slice(0, file.indexOf('/')) : file === 'agent.ts' ? file : '';
  return wings.findIndex((wing) => wing.includes(folder));
}

/** Each file of src/core (relative, `.ts`) with the files of src/core it imports, type-only imports too. */
function coreImports(root = 'src/core'): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts')).sort()) {
    const targets = new Set<string>();
    // Every static import, re-export, side-effect import and dynamic import() of the file.
    for (const { fileName } of ts.preProcessFile(readFileSync(`${root}/${file}`, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), fileName)).replace(/\.js$/, '.ts');
      targets.add(target.startsWith('../') ? `outside core: ${target}` : target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Every import that climbs: from a wing to a wing above it, or out of core. */
function backArrows(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    if (wingOf(file) < 0) found.push(`${file}: in no wing (add its folder to the order, here and in docs/architecture.md)`);
    for (const target of targets) {
      if (target.startsWith('outside core') || wingOf(target) < wingOf(file)) found.push(`${file} -> ${target}`);
    }
  }
  return found;
}

/** One cycle per circle of files that import each other (Tarjan's strongly connected components). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("core's wings", () => {
  const graph = coreImports();

  it('reads every file of src/core, and every import names a file that exists', () => {
    expect(graph.size).toBeGreaterThan(40);
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((target) => !target.startsWith('outside core') && !existsSync(`src/core/${target}`)).map((target) => `${file} -> ${target}`));
    expect(missing).toEqual([]);
  });

  it('keeps every import on its own wing or a lower one: agent.ts, runner, memory, loop, prompts, the ground', () => {
    expect(backArrows(graph)).toEqual([]);
  });

  it('has no circle of files that import each other', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('catches an import that climbs a wing, and a circle', () => {
    const climbing = new Map([
      ['loop/worker-loop.ts', ['runner/steer-inbox.ts', 'prompts/prompts.ts']],
      ['runner/steer-inbox.ts', []],
      ['prompts/prompts.ts', ['store.ts']],
      ['store.ts', ['agent.ts']],
      ['agent.ts', ['store.ts']],
      ['ports/new.ts', []],
    ]);
    expect(backArrows(climbing)).toEqual([
      'loop/worker-loop.ts -> runner/steer-inbox.ts',
      'store.ts -> agent.ts',
      'ports/new.ts: in no wing (add its folder to the order, here and in docs/architecture.md)',
    ]);
    expect(circles(climbing)).toEqual([['agent.ts', 'store.ts']]);
  });
});
