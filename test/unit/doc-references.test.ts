// Every rule tag (R1…) and document the code cites resolves to a file in this repository: a
// contributor can always check what a comment says the code must do.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const scanned = ['src', 'test', 'docs', 'bench', 'scripts', 'prisma', 'deploy', 'README.md', 'CONTRIBUTING.md'];
const skipped = new Set(['generated', 'migrations', 'node_modules', 'history']);
const textFile = /\.(ts|md|prisma|sh|service|json|ya?ml)$/;

function filesUnder(path: string): string[] {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full).flatMap((name) => (skipped.has(name) ? [] : filesUnder(join(path, name))));
}

// This file names the forbidden patterns itself.
const sources = scanned
  .flatMap(filesUnder)
  .filter((file) => textFile.test(file) && !file.endsWith('doc-references.test.ts'));
const text = new Map(sources.map((file) => [file, readFileSync(join(root, file), 'utf8')]));

/** Every `pattern` match in the scanned files, with the file and line it was found on. */
function citations(pattern: RegExp): Array<{ where: string; line: string; match: RegExpMatchArray }> {
  return [...text].flatMap(([file, body]) =>
    body.split('\n').flatMap((line, index) =>
      [...line.matchAll(pattern)].map((match) => ({ where: `${file}:${index + 1}`, line, match })),
    ),
  );
}

/**
 * The section names of a Markdown file: its headings, and the bold label that opens a list item or
 * a paragraph (`- **Watch**: …`, `**Core's wings.** …`), trailing punctuation dropped.
 */
function sectionsOf(file: string): Set<string> {
  const body = readFileSync(join(root, file), 'utf8');
  const headings = [...body.matchAll(/^#+ (.+)$/gm)].map((match) => match[1]!.trim());
  const labels = [...body.matchAll(/^(?:[-*] |\d+\. )?\*\*([^*\n]+)\*\*/gm)].map((match) => match[1]!.trim().replace(/[.:]$/, ''));
  return new Set([...headings, ...labels]);
}

describe('document references', () => {
  it('scans the sources, tests and docs', () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(sources).toContain('docs/memory-rules.md');
  });

  it('defines every cited memory rule in docs/memory-rules.md', () => {
    const rules = readFileSync(join(root, 'docs/memory-rules.md'), 'utf8');
    const defined = new Set([...rules.matchAll(/^\*\*R(\d+) /gm)].map((match) => Number(match[1])));
    expect(defined.size).toBeGreaterThanOrEqual(20);
    const undefinedRules = citations(/\bR(\d+)\b/g)
      .filter(({ match }) => !defined.has(Number(match[1])))
      .map(({ where, match }) => `${where}: ${match[0]}`);
    expect(undefinedRules).toEqual([]);
  });

  it('names only documents that exist in the repository', () => {
    // In code only comments cite documents; strings hold memory documents of tests ('docs/a.md').
    const missing = citations(/(?<![\w./-])((?:docs|bench)\/[\w./-]+\.md|(?:product|style|memory-rules|architecture|operations|configuration|security|benchmarks)\.md|CONTRIBUTING\.md)\b/g)
      .filter(({ where, line, match }) => {
        if (/\.ts:\d+$/.test(where) && !/^\s*(\/\/|\*|\/\*)/.test(line)) return false;
        const cited = match[1]!;
        return !existsSync(join(root, cited)) && !existsSync(join(root, 'docs', cited));
      })
      .map(({ where, match }) => `${where}: ${match[1]}`);
    expect(missing).toEqual([]);
  });

  it('cites documents by their path in the repository, not by a bare name', () => {
    const bare = citations(/(?<![\w./-])(?:product|style|memory-rules)\.md/g)
      .filter(({ where }) => where.startsWith('src/') || where.startsWith('test/'))
      .map(({ where, match }) => `${where}: ${match[0]}`);
    expect(bare).toEqual([]);
  });

  it('cites only sections of the style guide that exist', () => {
    const style = readFileSync(join(root, 'docs/style.md'), 'utf8');
    const sections = [...style.matchAll(/^(\d+)\. \*\*/gm)].length;
    const bad = citations(/style\.md §(\d+)/g)
      .filter(({ match }) => Number(match[1]) < 1 || Number(match[1]) > sections)
      .map(({ where, match }) => `${where}: ${match[0]}`);
    expect(bad).toEqual([]);
  });

  it('quotes only section names that exist in the document it cites', () => {
    // `docs/product.md "Review memory"`, or several: `docs/product.md "Memory spaces", "Who may do what"`.
    const quoted = /"([^"\n]+)"|“([^”\n]+)”/g;
    const stale = citations(/(?<![\w./-])((?:docs|bench)\/[\w./-]+\.md|[\w-]+\.md),? ((?:"[^"\n]+"|“[^”\n]+”)(?:,? (?:and |or )?(?:"[^"\n]+"|“[^”\n]+”))*)/g)
      .filter(({ where, line }) => !/\.ts:\d+$/.test(where) || /^\s*(\/\/|\*|\/\*)/.test(line))
      .flatMap(({ where, match }) => {
        const cited = [match[1]!, join('docs', match[1]!)].find((file) => existsSync(join(root, file)) && file.endsWith('.md'));
        // A document that does not exist is the test above's to report.
        if (!cited) return [];
        const sections = sectionsOf(cited);
        return [...match[2]!.matchAll(quoted)]
          .map((name) => (name[1] ?? name[2])!)
          .filter((name) => !sections.has(name))
          .map((name) => `${where}: ${match[1]} "${name}"`);
      });
    expect(stale).toEqual([]);
  });

  it('links only to files and headings that exist', () => {
    // GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    const anchorsOf = (file: string) =>
      new Set([...readFileSync(join(root, file), 'utf8').matchAll(/^#+ (.+)$/gm)].map((match) => match[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));
    const broken = [...text.keys()]
      .filter((file) => file.endsWith('.md'))
      .flatMap((file) =>
        [...text.get(file)!.matchAll(/\]\(([^)\s]+)\)/g)].flatMap((match) => {
          const [target = '', anchor] = match[1]!.split('#');
          if (/^[a-z]+:/.test(target)) return [];
          const resolved = target === '' ? file : join(dirname(file), target);
          if (!existsSync(join(root, resolved))) return [`${file}: ${match[1]}`];
          if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) return [`${file}: ${match[1]}`];
          return [];
        }),
      );
    expect(broken).toEqual([]);
  });

  it('needs nothing outside the repository', () => {
    const outside = citations(/\.\.\/shared|spec\/(?:memory|product)\.md|original-design|reference §/g)
      // The offline Prisma engine is an optional helper of one machine, never needed to run or test.
      .filter(({ line }) => !line.includes('prisma-offline-engine'))
      .map(({ where, match }) => `${where}: ${match[0]}`);
    expect(outside).toEqual([]);
  });
});
