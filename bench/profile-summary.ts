// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function and by package or file.
// Usage: npx tsx bench/profile-summary.ts <file.cpuprofile> [top=25]
// To profile a benchmark: node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/b2-overhead.ts
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a script lives, coarsely: a package name, a src/ file, or a Node internal. */
function owner(url: string): string {
  if (url === '') return '(native / vm)';
  if (url.startsWith('node:')) return 'node internals';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1] ?? url;
  const local = /\/work\/main\/(.*)$/.exec(url.replace('file://', ''));
  return local?.[1] ?? url;
}

export async function summarizeProfile(path: string, top = 25): Promise<string> {
  const profile = JSON.parse(await readFile(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const total = profile.endTime - profile.startTime;
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    const name = `${frame.functionName || '(anonymous)'} ${owner(frame.url)}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    byOwner.set(owner(frame.url), (byOwner.get(owner(frame.url)) ?? 0) + micros);
  }
  const lines = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((left, right) => right[1] - left[1])
      .slice(0, top)
      .map(([name, micros]) => `${(micros / 1000).toFixed(0).padStart(8)} ms ${((micros * 100) / total).toFixed(1).padStart(5)}%  ${name}`);
  return [
    `profile ${path}: ${(total / 1000).toFixed(0)} ms wall`,
    '',
    'self time by package / file:',
    ...lines(byOwner),
    '',
    'self time by function:',
    ...lines(byFunction),
  ].join('\n');
}

const [file, topArgument] = process.argv.slice(2);
if (file) console.log(await summarizeProfile(file, Number(topArgument ?? 25)));
