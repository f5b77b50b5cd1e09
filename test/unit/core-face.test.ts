// Core's face (docs/architecture.md, "Core's face"): code outside src/core reaches core through
// agent.ts (the Agent, its memory review, the types of what they take and return) and the ground
// (the ports and types in src/core and src/core/store, and the helpers every wing shares), never
// through a wing (runner, memory, loop, prompts). build-agent.ts alone, which wires the concrete
// parts, may reach into the wings. Read from the source, as core-wings.test.ts reads core.
import { readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** Files outside core that may import a wing: the place that builds the agent from its parts. */
const wiring = new Set(['build-agent.ts']);

/** Is `target` (a path inside src/core) on core's face? */
function onFace(target: string): boolean {
  return target === 'agent.ts' || !target.includes('/') || target.startsWith('store/');
}

/** Each file of src outside core (relative to src) with the files of src/core it imports, type-only imports too. */
function importsIntoCore(root = 'src'): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts') && !name.startsWith('core/')).sort()) {
    const targets = new Set<string>();
    // Every static import, re-export, side-effect import and dynamic import() of the file.
    for (const { fileName } of ts.preProcessFile(readFileSync(`${root}/${file}`, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), fileName)).replace(/\.js$/, '.ts');
      if (target.startsWith('core/')) targets.add(target.slice('core/'.length));
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Every import from outside core into one of core's wings (but the wiring's). */
function behindTheFace(graph: ReadonlyMap<string, readonly string[]>): string[] {
  return [...graph].flatMap(([file, targets]) => (wiring.has(file) ? [] : targets.filter((target) => !onFace(target)).map((target) => `${file} -> core/${target}`)));
}

describe("core's face", () => {
  const graph = importsIntoCore();

  it('reads the adapters, the tools and the entry points, and finds them using core', () => {
    const users = [...graph].filter(([, targets]) => targets.length > 0).map(([file]) => file);
    expect(users.filter((file) => file.startsWith('adapters/')).length).toBeGreaterThan(50);
    expect(users.filter((file) => file.startsWith('tools/')).length).toBeGreaterThan(5);
    expect(users).toContain('adapters/slack/memory-submissions.ts');
  });

  it('keeps src/adapters, src/tools and the entry points on agent.ts and the ground: nothing imports a wing of core', () => {
    expect(behindTheFace(graph)).toEqual([]);
  });

  it('catches an import into a wing, and lets the wiring and the ground through', () => {
    const graph = new Map([
      ['adapters/slack/memory-submissions.ts', ['agent.ts', 'store.ts', 'memory/memory-review.ts']],
      ['tools/web.ts', ['output-cap.ts', 'store/sessions.ts', 'loop/output-cap.ts']],
      ['build-agent.ts', ['loop/tool-executor.ts']],
    ]);
    expect(behindTheFace(graph)).toEqual(['adapters/slack/memory-submissions.ts -> core/memory/memory-review.ts', 'tools/web.ts -> core/loop/output-cap.ts']);
  });
});
